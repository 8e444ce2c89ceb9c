"""A JSON-RPC request answered in front of Django under ASGI (`/mcp`, `/a2a/…`), read and
checked here, once for both faces, before their SDK parses it.

Its body is read up to VANCETOPE_MAX_FRAME_BYTES, as a WebSocket frame is: a longer one is a 413
with REST's error body, refused before it is read whole. Then it must hold what REST and the
WebSocket take (vancetope/jsonbody.py): JSON in UTF-8 with no string or key holding a NUL
character or a lone surrogate, and no number that is infinite or too long to read; and it may
nest at most MAX_DEPTH levels. A request that breaks one is answered here with the JSON-RPC
error of the place at fault, and nothing of it reaches a service:

| at fault                                                  | error                            |
| --------------------------------------------------------- | -------------------------------- |
| the body: not JSON, not UTF-8, nested too deeply to read  | -32700 parse error               |
| the envelope: `id`, `method`, anything beside `params`    | -32600 invalid request           |
| what is in `params`                                       | -32602 invalid params            |

The message starts with the field, as REST's 400 does (`message.parts.0.text: must not contain
NUL characters (\\u0000)`), and the data is `{"field": …}`. A field in `params` is named from
inside it, as each face names its arguments (`goal` for an MCP tool's argument,
`message.contextId` for A2A's). The answer carries the request's id, or null when the id is at
fault or the body cannot be read. Each face renders the refusal as its SDK renders its own
errors (`Render`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from triggers.webhooks.endpoint import security_headers
from vancetope.asgi_bearer import Scope, refuse
from vancetope.errors import BadRequest
from vancetope.jsonbody import deeper_than, json_problem, read_json, text_problem

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
# Deeper than any request of either face needs, and below what their SDKs follow: protobuf's
# JSON reader (A2A's) gives up at 100 levels, with an internal error.
MAX_DEPTH = 64
# A value nested too deeply is named by the first places of its path (`message.parts.0.data`),
# not by all sixty of them.
DEPTH_FIELD_PARTS = 4

RequestId = str | int | None


@dataclass(frozen=True)
class Refusal:
    """A JSON-RPC error for a request, and what the face needs to render it."""

    code: int
    message: str
    field: str | None
    request_id: RequestId
    method: str  # "" when it could not be read

    @property
    def data(self) -> dict[str, str] | None:
        return {"field": self.field} if self.field else None

    def error(self) -> dict[str, Any]:
        """The JSON-RPC error object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


# A face's own check of `params` (method, params): the field under `params` and its problem.
ParamsCheck = Callable[[str, Any], "tuple[str, str] | None"]
# A face's name for a field under `params` (method, dotted place): MCP names a tool's argument.
FieldName = Callable[[str, str], str]
# A face's answer of a refusal (send, refusal).
Render = Callable[[Any, Refusal], Awaitable[None]]


def envelope(value: Any) -> tuple[RequestId, str]:
    """The request's id (None unless a storable string or an integer) and method ("" unless a
    string)."""
    if not isinstance(value, dict):
        return None, ""
    given = value.get("id")
    method = value.get("method")
    if isinstance(given, bool) or not isinstance(given, str | int):
        given = None
    elif isinstance(given, str) and text_problem(given):
        given = None
    return given, method if isinstance(method, str) else ""


def check_request(
    body: bytes,
    *,
    params_check: ParamsCheck | None = None,
    field_name: FieldName | None = None,
) -> Refusal | None:
    """The refusal of a request's body, or None when it may go to the SDK."""
    try:
        value = read_json(body, "the body")
    except BadRequest as exc:
        return Refusal(PARSE_ERROR, exc.message, None, None, "")
    request_id, method = envelope(value)
    found = json_problem(value)
    deep = False
    if found is None:
        place = deeper_than(value, MAX_DEPTH)
        if place is not None:
            found, deep = (place or "body", f"nested more than {MAX_DEPTH} levels deep"), True
    if found is None and params_check is not None and isinstance(value, dict):
        own = params_check(method, value.get("params"))
        found = (f"params.{own[0]}", own[1]) if own is not None else None
    if found is None:
        return None
    field, problem = found
    head, _, inner = field.partition(".")
    if head == "params" and inner:
        named = field_name(method, inner) if field_name is not None else inner
        named = ".".join(named.split(".")[:DEPTH_FIELD_PARTS]) if deep else named
        return Refusal(INVALID_PARAMS, f"{named}: {problem}", named, request_id, method)
    if head == "params":
        return Refusal(INVALID_PARAMS, f"params: {problem}", "params", request_id, method)
    field = ".".join(field.split(".")[:DEPTH_FIELD_PARTS]) if deep else field
    answered_id = None if head == "id" else request_id
    return Refusal(INVALID_REQUEST, f"{field}: {problem}", field, answered_id, method)


async def read_request(
    scope: Scope,
    receive: Any,
    send: Any,
    *,
    render: Render,
    params_check: ParamsCheck | None = None,
    field_name: FieldName | None = None,
) -> bytes | None:
    """The request's body once it is within the limit and passes the checks; None once the
    refusal (a 413, or the face's JSON-RPC error) has been answered."""
    body = await bounded_body(scope, receive)
    if body is None:
        limit = settings.VANCETOPE_MAX_FRAME_BYTES
        await refuse(
            send,
            413,
            "too-large",
            f"the request body is over {limit} bytes (VANCETOPE_MAX_FRAME_BYTES, as for a "
            "WebSocket frame)",
        )
        return None
    refusal = check_request(body, params_check=params_check, field_name=field_name)
    if refusal is not None:
        await render(send, refusal)
        return None
    return body


async def answer_json(send: Any, status: int, payload: Any) -> None:
    """`payload` as a JSON answer, with the headers every answer in front of Django has."""
    body = json.dumps(payload).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *security_headers(),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def bounded_body(scope: Scope, receive: Any) -> bytes | None:
    """The request's body, read up to VANCETOPE_MAX_FRAME_BYTES; None when it is longer (said
    by its Content-Length, before anything is read, or found while reading a chunked one):
    a body of any size is never held."""
    limit = int(settings.VANCETOPE_MAX_FRAME_BYTES)
    declared = dict(scope.get("headers") or []).get(b"content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client went away: the SDK sees what came
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Any) -> Any:
    """A `receive` that gives the body read already, then the client's own messages (its
    disconnect, which a stream of events waits for)."""
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replayed
