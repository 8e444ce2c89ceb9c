"""REST: /api/webhooks (configurations, rotate-secret).

The inbound delivery `POST /api/webhooks/{id}` is no Django view: it is answered in front of
Django's handler, on the raw bytes, by triggers/webhook_endpoint.py (vancetope/asgi.py), so it
never reaches these views.
"""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from processes.presenters import iso
from triggers import webhooks
from triggers.models import Webhook
from triggers.workflows import field_error
from vancetope.api import PAGE_PARAMETERS, Body, Page, errors, paginated
from vancetope.tenancy.services import get_visible_project, visible_projects


class WebhookAction(Body):
    type: Literal["run_workflow", "unblock_tasks"]
    workflowId: str | None = None
    input: dict[str, str] | None = None
    match: dict[str, str] | None = None


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
    secret: str | None = None


class WebhookInput(Body):
    projectId: str | None = None
    name: str
    mode: Literal["secret", "signature"]
    filter: dict[str, Any] | None = None
    action: WebhookAction


class WebhookPatch(Body):
    name: str | None = None
    filter: dict[str, Any] | None = None
    action: WebhookAction | None = None


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
        raise field_error("body", "must be an object")
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

    @extend_schema(request=WebhookInput, responses={201: WebhookObject, **errors(400, 401, 404)})
    def create(self, request: Request) -> Response:
        body = _object(request)
        project_id = body.pop("projectId", None)
        if project_id is None:
            seen = list(visible_projects(request.user)[:2])
            if len(seen) != 1:
                raise field_error("projectId", "is required (you see several projects)")
            project = seen[0]
        elif not isinstance(project_id, str):
            raise field_error("projectId", "must be a project id like proj_x")
        else:
            project = get_visible_project(request.user, project_id)
        made = webhooks.create_webhook(request.user, project, body)
        return Response(webhook_data(made.webhook, made.secret), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: WebhookObject, **errors(401, 404)})
    def retrieve(self, request: Request, webhook_id: str) -> Response:
        return Response(webhook_data(webhooks.get_visible_webhook(request.user, webhook_id)))

    @extend_schema(request=WebhookPatch, responses={200: WebhookObject, **errors(400, 401, 404)})
    def partial_update(self, request: Request, webhook_id: str) -> Response:
        webhook = webhooks.change_webhook(request.user, webhook_id, _object(request))
        return Response(webhook_data(webhook))

    @extend_schema(request=None, responses={204: None, **errors(401, 404)})
    def destroy(self, request: Request, webhook_id: str) -> HttpResponse:
        webhooks.delete_webhook(request.user, webhook_id)
        return HttpResponse(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: WebhookObject, **errors(401, 404)})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request: Request, webhook_id: str) -> Response:
        made = webhooks.rotate_visible_secret(request.user, webhook_id)
        return Response(webhook_data(made.webhook, made.secret))
