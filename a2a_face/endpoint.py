"""`/a2a/<project>/<recipe>` under ASGI, in front of Django (as `/mcp` is): the Host header and
the API token are checked first (vancetope/asgi_bearer.py: a 401 with REST's body without a
valid one), then the agent is looked up for the person (a project they cannot see, a recipe
that is not public: a 404, card and endpoint alike), and the request goes to a Starlette app
of the SDK's pieces with the person and the agent in its scope:

    GET  /a2a/<project>/<recipe>/.well-known/agent-card.json   the agent's card
    POST /a2a/<project>/<recipe>                                JSON-RPC (1.0 and 0.3 methods)

A request's body is read and checked by vancetope/asgi_jsonrpc.py before the SDK sees it: at
most VANCETOPE_MAX_FRAME_BYTES (as a WebSocket frame; a longer one is a 413 with REST's error
body, before it is read whole), and holding only what REST and the WebSocket take (a NUL, a lone
surrogate, a number too long to read or too large for its count, a body nested too deeply or not
UTF-8 are JSON-RPC errors naming the field, answered as the SDK answers its own).

Every path outside `/a2a/` goes to the wrapped application untouched.
"""

from __future__ import annotations

import re
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.jsonrpc_models import JSONParseError
from a2a.server.request_handlers.response_helpers import agent_card_to_dict, build_error_response
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import A2AError, InvalidParamsError, InvalidRequestError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a2a_face.agents import agent_card, public_agent
from a2a_face.handler import AGENT, PERSON, ProcessTasks
from vancetope.asgi_bearer import Scope, authenticated_person, refuse
from vancetope.asgi_jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    Refusal,
    answer_json,
    read_request,
    replay,
)
from vancetope.errors import NotFound
from vancetope.service_calls import call_service

PREFIX = "/a2a/"
AGENT_PATH = re.compile(
    r"^/a2a/(?P<project>[^/]+)/(?P<recipe>[^/]+)(?P<card>"
    + re.escape(AGENT_CARD_WELL_KNOWN_PATH)
    + r")?/?$"
)


class Person(User):
    """The person behind the token, as the SDK's call context names a user."""

    def __init__(self, user: Any) -> None:
        self.user = user

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return str(self.user.get_username())


class PersonContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the person and the agent the endpoint found."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[PERSON] = request.scope[PERSON]
        context.state[AGENT] = request.scope[AGENT]
        return context

    def build_user(self, request: Request) -> User:
        return Person(request.scope[PERSON])


async def card(request: Request) -> Response:
    base_url = str(request.base_url).rstrip("/")
    return JSONResponse(agent_card_to_dict(agent_card(request.scope[AGENT], base_url)))


def build_app() -> Starlette:
    dispatcher = JsonRpcDispatcher(
        request_handler=ProcessTasks(), context_builder=PersonContext(), enable_v0_3_compat=True
    )
    return Starlette(
        routes=[
            Route("/a2a/{project}/{recipe}" + AGENT_CARD_WELL_KNOWN_PATH, card, methods=["GET"]),
            Route("/a2a/{project}/{recipe}", dispatcher.handle_requests, methods=["POST"]),
            Route("/a2a/{project}/{recipe}/", dispatcher.handle_requests, methods=["POST"]),
        ]
    )


class A2aEndpoint:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.agents = build_app()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        user = await authenticated_person(scope, send)
        if user is None:
            return
        match = AGENT_PATH.match(scope["path"])
        if match is None:
            await refuse(send, 404, "not-found", "A2A agents are at /a2a/<project>/<recipe>")
            return
        try:
            agent = await call_service(public_agent, user, match["project"], match["recipe"])
        except NotFound as exc:
            await refuse(send, 404, "not-found", exc.message)
            return
        if scope.get("method") != "POST":
            await self.agents({**scope, PERSON: user, AGENT: agent}, receive, send)
            return
        body = await read_request(
            scope, receive, send, render=render_refusal, params_check=counts_in_range
        )
        if body is None:
            return
        await self.agents({**scope, PERSON: user, AGENT: agent}, replay(body, receive), send)


# The counts the SDK keeps in 32-bit fields (by their JSON and their proto names), where they
# are in `params`: beyond 32 bits its conversion of a 0.3 request fails with an internal error.
COUNTS = ("historyLength", "history_length", "pageSize", "page_size")
COUNT_LIMIT = 2**31


def counts_in_range(method: str, params: Any) -> tuple[str, str] | None:
    """The first count of `params` (its own, or its `configuration`'s) beyond 32 bits."""
    if not isinstance(params, dict):
        return None
    for holder, prefix in ((params, ""), (params.get("configuration"), "configuration.")):
        if not isinstance(holder, dict):
            continue
        for name in COUNTS:
            value = holder.get(name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if not -COUNT_LIMIT <= value < COUNT_LIMIT:
                return f"{prefix}{name}", f"must be a count below {COUNT_LIMIT}"
    return None


# The errors of vancetope/asgi_jsonrpc.py as the SDK's 1.0 answers have them (a parse error
# as its dispatcher answers one: the JSON-RPC model, with no details).
ERRORS: dict[int, type[A2AError]] = {
    INVALID_REQUEST: InvalidRequestError,
    INVALID_PARAMS: InvalidParamsError,
}


async def render_refusal(send: Any, refusal: Refusal) -> None:
    """A refusal as the SDK answers its own errors (HTTP 200): for a 1.0 method (or none read)
    built by the SDK's own helper, the field in the ErrorInfo of the error's details; for any
    other (0.3's `message/send`, …) the error object with `data` `{"field": …}`, as its 0.3
    adapter has it."""
    if refusal.code == PARSE_ERROR:
        payload = build_error_response(None, JSONParseError(message=refusal.message))
    elif not refusal.method or refusal.method in JsonRpcDispatcher.METHOD_TO_MODEL:
        error = ERRORS[refusal.code](message=refusal.message, data=refusal.data)
        payload = build_error_response(refusal.request_id, error)
    else:
        payload = {"jsonrpc": "2.0", "id": refusal.request_id, "error": refusal.error()}
    await answer_json(send, 200, payload)
