"""REST: /api/webhooks (configurations, rotate-secret).

The inbound delivery `POST /api/webhooks/{id}` is no Django view: it is answered in front of
Django's handler, on the raw bytes, by triggers/webhooks/endpoint.py (vancetope/asgi.py), so it
never reaches these views.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field, WithJsonSchema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from protocol.vocabulary import iso
from triggers.models import Webhook
from triggers.webhooks import configs as webhooks
from triggers.webhooks.configs import DOTTED_PATH
from vancetope.api import (
    OMITTED,
    PAGE_PARAMETERS,
    Body,
    InputBody,
    Page,
    change_body,
    errors,
    paginated,
)
from vancetope.errors import BadRequest
from vancetope.openapi import NOT_BLANK
from vancetope.tenancy.services import get_visible_project, visible_projects


class RunWorkflowAction(InputBody):
    """Run a workflow of the webhook's project, its inputs templates of the delivery."""

    type: Literal["run_workflow"]
    workflowId: Annotated[str, Field(pattern=NOT_BLANK)]
    # Every input of the workflow, and no other.
    input: dict[str, str] = {}


class BlockedByExternal(InputBody):
    blockedByExternal: Annotated[str, Field(pattern=NOT_BLANK, max_length=200)]


class UnblockTasksAction(InputBody):
    """Unblock the tasks waiting for this external event."""

    type: Literal["unblock_tasks"]
    match: BlockedByExternal


# What a delivery does, by `type` (triggers/webhooks.py checked_action).
WebhookAction = Annotated[RunWorkflowAction | UnblockTasksAction, Field(discriminator="type")]
# A name: not blank, at most 100 characters.
WebhookName = Annotated[str, Field(pattern=NOT_BLANK, max_length=100)]
# Dotted paths of the payload and the values they must have.
WebhookFilter = Annotated[
    dict[str, Any],
    WithJsonSchema({"type": "object", "propertyNames": {"pattern": DOTTED_PATH}}),
]


class WebhookObject(Body):
    """A webhook configuration; `secret` only in the reply of create and rotate-secret."""

    id: str
    projectId: str
    name: str
    mode: Literal["secret", "signature"]
    filter: dict[str, Any]
    action: dict[str, Any]
    url: str
    previousSecretValidUntil: str | None
    createdAt: str
    updatedAt: str
    # Left out of every answer but those of create and rotate-secret: not required.
    secret: str | None = Field(default=None, exclude_if=lambda value: value is None)


class WebhookInput(InputBody):
    projectId: str | None = None
    name: WebhookName
    mode: Literal["secret", "signature"]
    filter: WebhookFilter | None = None
    action: WebhookAction


class WebhookPatch(InputBody):
    """The fields of a webhook a PATCH replaces (a name and an action are never null)."""

    name: WebhookName = OMITTED
    filter: WebhookFilter | None = None
    action: WebhookAction = OMITTED


class WebhookPage(Page[WebhookObject]):
    """A page of webhooks, by name."""


def webhook_data(webhook: Webhook, secret: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": webhook.public_id,
        "projectId": webhook.project.public_id,
        "name": webhook.name,
        "mode": webhook.mode,
        "filter": dict(webhook.filter or {}),
        "action": dict(webhook.action or {}),
        "url": f"/api/webhooks/{webhook.public_id}",
        "previousSecretValidUntil": iso(webhook.previous_until)
        if webhook.previous_secret
        else None,
        "createdAt": iso(webhook.created_at),
        "updatedAt": iso(webhook.updated_at),
    }
    if secret is not None:
        data["secret"] = secret
    return data


def _object(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise BadRequest.naming("body", "must be an object")
    return dict(request.data)


class WebhookViewSet(viewsets.ViewSet):
    lookup_field = "webhook_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="webhooks_list",
        parameters=[OpenApiParameter("project", str, description="proj_…"), *PAGE_PARAMETERS],
        responses={200: WebhookPage, **errors(400, 401, 404)},
    )
    def list(self, request: Request) -> Response:
        rows = webhooks.filtered_webhooks(request.user, request.query_params.get("project"))
        return paginated(request, self, rows, webhook_data)

    @extend_schema(
        request=WebhookInput, responses={201: WebhookObject, **errors(400, 401, 403, 404, 409)}
    )
    def create(self, request: Request) -> Response:
        body = _object(request)
        project_id = body.pop("projectId", None)
        if project_id is None:
            seen = list(visible_projects(request.user)[:2])
            if len(seen) != 1:
                raise BadRequest.naming("projectId", "is required (you see several projects)")
            project = seen[0]
        elif not isinstance(project_id, str):
            raise BadRequest.naming("projectId", "must be a project id like proj_x")
        else:
            project = get_visible_project(request.user, project_id)
        made = webhooks.create_webhook(request.user, project, body)
        return Response(webhook_data(made.webhook, made.secret), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: WebhookObject, **errors(401, 404)})
    def retrieve(self, request: Request, webhook_id: str) -> Response:
        return Response(webhook_data(webhooks.get_visible_webhook(request.user, webhook_id)))

    @extend_schema(
        request=WebhookPatch, responses={200: WebhookObject, **errors(400, 401, 403, 404, 409)}
    )
    def partial_update(self, request: Request, webhook_id: str) -> Response:
        webhook = webhooks.change_webhook(request.user, webhook_id, change_body(request))
        return Response(webhook_data(webhook))

    @extend_schema(request=None, responses={204: None, **errors(401, 403, 404)})
    def destroy(self, request: Request, webhook_id: str) -> HttpResponse:
        webhooks.delete_webhook(request.user, webhook_id)
        return HttpResponse(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: WebhookObject, **errors(401, 403, 404)})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request: Request, webhook_id: str) -> Response:
        made = webhooks.rotate_visible_secret(request.user, webhook_id)
        return Response(webhook_data(made.webhook, made.secret))
