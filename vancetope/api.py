"""Shared REST pieces: error bodies, pagination of presenter output, and /healthz.

Bodies are described by pydantic models (drf-spectacular reads them), so /api/schema/ shows the
shapes the views send: the objects of protocol/outbound.py, `Page` envelopes of
them, and `ErrorBody` for every 4xx.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from django.db.models import Model, QuerySet
from django.http import HttpRequest, JsonResponse
from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema_serializer,
)
from pydantic import BaseModel, ConfigDict, Field
from rest_framework import serializers
from rest_framework.exceptions import APIException, UnsupportedMediaType, ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from vancetope.errors import BadRequest, BrainError
from vancetope.ids import MAX_PK, parse_whole_number, public_id_pattern
from vancetope.openapi import NOT_BLANK
from vancetope.ratelimit import RateLimited

T = TypeVar("T")


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


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class InputBody(BaseModel):
    """A request body described by a model (a view or domain function checks it): unknown
    keys refused, a field with a default may be left out (the document does not require it,
    unlike a `Body` the server sends, whose every field is present)."""

    model_config = ConfigDict(extra="forbid")


# A request body checked by DRF that, like a `Body`, refuses keys it does not declare (a 400
# naming each); the OpenAPI document says so (`additionalProperties: false`,
# vancetope/openapi.py), so a client reads which keys a body takes. (No docstring: the
# document would describe every subclass's body with it.)
class InputSerializer(serializers.Serializer):
    # The component names of every subclass (drf-spectacular names a component after its
    # serializer class), read by the document's postprocessing hook.
    closed_components: set[str] = set()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        InputSerializer.closed_components.add(cls.__name__)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                raise ValidationError({key: ["is not a field of this body"] for key in unknown})
        return super().to_internal_value(data)


# A text field that takes text only, as the document says (`type: string`): DRF's CharField
# also takes a number or a boolean as its text (`0` becomes "0"). (No docstring: the document
# would describe the field with it.)
class TextField(serializers.CharField):
    default_error_messages = {"not_text": "must be text (a JSON string), not {kind}"}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            kind = "null" if data is None else type(data).__name__
            self.fail("not_text", kind=kind)
        return str(super().to_internal_value(data))


# A text field whose rule the document states as a `pattern` (the view, or the domain
# function it calls, refuses any other text with a 400 naming the field). (No docstring: the
# document would describe the field with it.)
class PatternField(TextField):
    def __init__(self, pattern: str, **kwargs: Any) -> None:
        self.pattern = pattern
        super().__init__(**kwargs)


class PatternSchema(OpenApiSerializerFieldExtension):
    target_class = PatternField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "pattern": self.target.pattern}
        if self.target.max_length is not None:
            schema["maxLength"] = self.target.max_length
        return schema


class CharFieldSchema(OpenApiSerializerFieldExtension):
    """DRF's CharField strips its text and then refuses it blank (unless `allow_blank`): the
    document says so with a pattern (NOT_BLANK), not only `minLength`, which lets " " pass."""

    target_class = serializers.CharField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        field = self.target
        schema: dict[str, Any] = {"type": "string"}
        if field.trim_whitespace and not field.allow_blank:
            schema["pattern"] = NOT_BLANK
        if field.max_length is not None:
            schema["maxLength"] = field.max_length
        if field.min_length is not None:
            schema["minLength"] = field.min_length
        return schema


class TextSchema(CharFieldSchema):
    target_class = TextField


# A public id (`sess_12`) in a body.
class PublicIdField(PatternField):
    def __init__(self, prefix: str, **kwargs: Any) -> None:
        super().__init__(public_id_pattern(prefix), **kwargs)


def _omitted(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


# A field of a PATCH body that may be left out but not sent as null (no empty value is kept):
# `name: str = OMITTED` (the document shows no default).
OMITTED: Any = Field(default=None, json_schema_extra=_omitted)


class ErrorBody(Body):
    """Every error answer, as the WebSocket's error data: {code, error, message, field?}."""

    code: int
    error: str
    message: str
    # The input at fault (`action.constraints.maxTasks`), when the refusal names one: the
    # WebSocket error frame's and the MCP tool error's `field` (only then present).
    field: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # A validation error of a request body: the problems by field (only then present).
    fields: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)


ERROR_MEANINGS = {
    400: "a malformed parameter or body; the message names it",
    401: "no token, or a wrong one",
    403: "not allowed to the caller",
    404: "not found, or not visible to the caller",
    409: "the status forbids it; nothing was changed",
    429: "over a rate limit; nothing was done. Retry-After says when to try again",
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """The error answers an operation documents, for `@extend_schema(responses=…)`."""
    return {code: OpenApiResponse(ErrorBody, description=ERROR_MEANINGS[code]) for code in codes}


# The page is the whole body of a list operation, not one row of an array of pages.
@extend_schema_serializer(many=False)
class Page(Body, Generic[T]):
    """A page of a list (limit/offset pagination); subclass it per row type."""

    count: int
    next: str | None
    previous: str | None
    results: list[T]


# The ranges Pagination takes (a signed 64-bit number at most), so the schema allows no more.
PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_PK},
        description="rows per page (default 50)",
    ),
    OpenApiParameter(
        "offset", {"type": "integer", "minimum": 0, "maximum": MAX_PK}, description="rows to skip"
    ),
]


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


def change_body(request: Request) -> dict[str, Any]:
    """The JSON object of a PATCH: the fields to change. A PATCH without a body (DRF reads
    one as an empty form) or with another JSON value is a 400 naming the body."""
    if request.stream is None or not isinstance(request.data, dict):
        raise BadRequest("body: must be a JSON object of the fields to change", field="body")
    return dict(request.data)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every error answers with the body the WebSocket sends: {code, error, message, field?}.

    Domain errors carry it already; DRF's own errors (authentication, validation, unknown
    method, …) are reshaped so a client reads one error format. A validation error names the
    offending fields in `message`, the first in `field`, and lists them under `fields`.
    """
    if isinstance(exc, UnsupportedMediaType):
        # A body the parsers cannot read is bad input like any other: a 400 naming the header.
        exc = BadRequest(f"Content-Type: {exc.detail}; send application/json")
    if isinstance(exc, BrainError):
        fields = {exc.field: [exc.message]} if exc.field else None
        body = ErrorBody(
            code=exc.code, error=exc.error, message=exc.message, field=exc.field, fields=fields
        )
        answer = Response(body.model_dump(mode="json"), status=exc.code)
        if isinstance(exc, RateLimited):
            answer["Retry-After"] = str(exc.retry_after)
        return answer
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = response.status_code
    error = ERROR_WORDS.get(code) or (
        exc.default_code.replace("_", "-") if isinstance(exc, APIException) else "error"
    )
    data = response.data
    if isinstance(exc, ValidationError) and isinstance(data, dict):
        message = "; ".join(
            f"{name}: {text}" for name, problem in data.items() for text in _texts(problem)
        )
        body = ErrorBody(
            code=code, error=error, message=message, field=_first_field(data), fields=data
        )
    else:
        detail = data.get("detail", data) if isinstance(data, dict) else data
        body = ErrorBody(code=code, error=error, message="; ".join(_texts(detail)) or error)
    response.data = body.model_dump(mode="json")
    return response


def _first_field(problems: dict[str, Any]) -> str | None:
    """The dotted path of a DRF validation error's first problem (`params.maxTokens`)."""
    path: list[str] = []
    while isinstance(problems, dict) and problems:
        name, problems = next(iter(problems.items()))
        path.append(str(name))
    if path[:1] == [api_settings.NON_FIELD_ERRORS_KEY]:
        return None
    return ".".join(path) or None


def _texts(problem: Any) -> list[str]:
    """The messages in a DRF error detail, which nests lists and dicts for nested fields."""
    if isinstance(problem, dict):
        return [text for value in problem.values() for text in _texts(value)]
    if isinstance(problem, list):
        return [text for value in problem for text in _texts(value)]
    return [str(problem)]


class Pagination(LimitOffsetPagination):
    """DRF's limit/offset pagination, with a `limit` or `offset` that is no whole number a 400
    naming it (DRF falls back to the default, and passes numbers beyond 64 bits on to the
    database, which fails)."""

    def get_limit(self, request: Request) -> int | None:
        limit = self._number(request, self.limit_query_param, smallest=1)
        return self.default_limit if limit is None else limit

    def get_offset(self, request: Request) -> int:
        return self._number(request, self.offset_query_param, smallest=0) or 0

    @staticmethod
    def _number(request: Request, name: str, *, smallest: int) -> int | None:
        text = request.query_params.get(name)
        if text is None:
            return None
        value = parse_whole_number(text)
        if value is None or value < smallest:
            raise BadRequest(
                f"{name} must be a whole number from {smallest} to {2**63 - 1}, not {text!r}"
            )
        return value


def paginated(
    request: Request,
    view: Any,
    rows: QuerySet[Any] | list[Any],
    present: Callable[[Any], dict[str, Any]],
) -> Response:
    paginator = Pagination()
    page: Iterable[Model] = paginator.paginate_queryset(rows, request, view=view) or []
    return paginator.get_paginated_response([present(row) for row in page])


NO_ENDPOINT = "no-endpoint"


def api_not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Any path under /api/ that no view answers: the JSON error body, not Django's HTML 404
    page (with or without a trailing slash). Its `error` word, `no-endpoint`, tells a client
    the route is missing, not a row it asked for."""
    body = ErrorBody(
        code=404,
        error=NO_ENDPOINT,
        message=f"no API endpoint {request.path}; the endpoints are listed at /api/docs/",
    )
    return JsonResponse(body.model_dump(mode="json"), status=404)
