"""Shared REST pieces: error mapping, pagination of presenter output, and /healthz."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.db.models import Model, QuerySet
from django.http import HttpRequest, JsonResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from vancetope.errors import BrainError


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Describes the API token in the OpenAPI document, so /api/docs/ can send it."""

    target_class = "vancetope.tenancy.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token: `Authorization: Bearer <token>` (or `Token <token>`).",
        }


# The `error` word of each status, as domain errors (vancetope.errors) spell it.
ERROR_WORDS = {
    400: "bad-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not-found",
    409: "conflict",
    413: "too-large",
    429: "rate-limited",
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every error answers with the body the WebSocket sends: {code, error, message}.

    Domain errors carry it already; DRF's own errors (authentication, validation, unknown
    method, …) are reshaped so a client reads one error format. A validation error names the
    offending fields in `message` and lists them under `fields`.
    """
    if isinstance(exc, BrainError):
        return Response(exc.as_dict(), status=exc.code)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = response.status_code
    error = ERROR_WORDS.get(code) or (
        exc.default_code.replace("_", "-") if isinstance(exc, APIException) else "error"
    )
    body: dict[str, Any] = {"code": code, "error": error}
    data = response.data
    if isinstance(exc, ValidationError) and isinstance(data, dict):
        body["message"] = "; ".join(
            f"{name}: {text}" for name, problem in data.items() for text in _texts(problem)
        )
        body["fields"] = data
    else:
        detail = data.get("detail", data) if isinstance(data, dict) else data
        body["message"] = "; ".join(_texts(detail)) or error
    response.data = body
    return response


def _texts(problem: Any) -> list[str]:
    """The messages in a DRF error detail, which nests lists and dicts for nested fields."""
    if isinstance(problem, dict):
        return [text for value in problem.values() for text in _texts(value)]
    if isinstance(problem, list):
        return [text for value in problem for text in _texts(value)]
    return [str(problem)]


def paginated(
    request: Request,
    view: Any,
    rows: QuerySet[Any] | list[Any],
    present: Callable[[Any], dict[str, Any]],
) -> Response:
    paginator = LimitOffsetPagination()
    page: Iterable[Model] = paginator.paginate_queryset(rows, request, view=view) or []
    return paginator.get_paginated_response([present(row) for row in page])


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return connection.vendor


def _check_channel_layer() -> str:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer configured")

    async def round_trip() -> None:
        channel = await layer.new_channel("healthz.")
        await layer.send(channel, {"type": "healthz.ping"})
        await asyncio.wait_for(layer.receive(channel), timeout=2)

    async_to_sync(round_trip)()
    return type(layer).__name__


def _check_broker() -> str:
    if settings.VANCETOPE_WORKER == "inprocess":
        from processes.lane.worker import is_stopping

        if is_stopping():
            raise RuntimeError("in-process worker is shutting down")
        return "in-process"
    import redis

    redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2).ping()
    return "redis"


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness of the database, the channel layer and the task broker."""
    checks: dict[str, dict[str, Any]] = {}
    for name, check in (
        ("database", _check_database),
        ("channelLayer", _check_channel_layer),
        ("broker", _check_broker),
    ):
        started = time.perf_counter()
        try:
            detail = check()
            checks[name] = {"ok": True, "detail": detail}
        except Exception as exc:
            checks[name] = {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}
        checks[name]["ms"] = round((time.perf_counter() - started) * 1000, 2)
    ok = all(check["ok"] for check in checks.values())
    return JsonResponse({"ok": ok, "checks": checks}, status=200 if ok else 503)
