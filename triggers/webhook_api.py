"""REST: /api/webhooks (configurations, rotate-secret) and the inbound delivery
`POST /api/webhooks/{id}`.

The inbound delivery is a plain Django view, not DRF's: it needs the raw bytes (verified before
anything parses them, never re-serialized), no user authentication and no CSRF check, and it
reads at most VANCETOPE_WEBHOOK_MAX_BYTES + 1 bytes (a declared Content-Length over the cap is
refused unread). Under ASGI, triggers/body_cap.py enforces the same cap before Django buffers
the body. `webhook_route` sends a POST to it and every other method of the same path to the
configuration viewset.
"""

from __future__ import annotations

from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from processes.presenters import iso
from triggers import inbound, webhooks
from triggers.models import Webhook
from triggers.workflows import field_error
from vancetope.api import PAGE_PARAMETERS, Body, Page, errors, paginated
from vancetope.ids import parse_whole_number
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


def read_capped(request: HttpRequest) -> tuple[bytes | None, int]:
    """The body, read up to the cap + 1 bytes; None (and the size seen) when it is over."""
    limit = inbound.max_bytes()
    declared = parse_whole_number(str(request.META.get("CONTENT_LENGTH") or ""))
    if declared is not None and declared > limit:
        return None, declared
    data = request.read(limit + 1)
    if len(data) > limit:
        return None, len(data)
    return data, len(data)


# A delivery runs on a small pool of reused threads, each keeping its database connection:
# Django runs a sync view in a new thread per request under ASGI, and each such thread opened
# a connection of its own (60 of them under 10 senders on PostgreSQL, bench/webhooks.py).
_receive = sync_to_async(inbound.receive, thread_sensitive=False)


async def deliver(request: HttpRequest, webhook_id: str) -> HttpResponse:
    """`POST /api/webhooks/{id}`: one inbound delivery."""
    body, size = read_capped(request)
    headers = {name: request.headers[name] for name in inbound.HEADERS if name in request.headers}
    answer = await _receive(webhook_id, headers, body, size)
    return JsonResponse(answer.body, status=answer.status)


_detail = sync_to_async(
    WebhookViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"})
)


@csrf_exempt
async def webhook_route(request: HttpRequest, webhook_id: str) -> HttpResponse:
    if request.method == "POST":
        return await deliver(request, webhook_id)
    response: HttpResponse = await _detail(request, webhook_id=webhook_id)
    return response
