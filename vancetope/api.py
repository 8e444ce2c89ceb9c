"""Shared REST pieces: error mapping, pagination of presenter output, and /healthz."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import Model, QuerySet
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
