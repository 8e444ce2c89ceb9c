"""`/a2a/<project>/<recipe>` under ASGI, in front of Django (as `/mcp` is): the Host header and
the API token are checked first (vancetope/asgi_bearer.py: a 401 with REST's body without a
valid one), then the agent is looked up for the person (a project they cannot see, a recipe
that is not public: a 404, card and endpoint alike), and the request goes to a Starlette app
of the SDK's pieces with the person and the agent in its scope:

    GET  /a2a/<project>/<recipe>/.well-known/agent-card.json   the agent's card
    POST /a2a/<project>/<recipe>                                JSON-RPC (1.0 and 0.3 methods)

A request's body is read only up to VANCETOPE_MAX_FRAME_BYTES (as a WebSocket frame): a
longer one is a 413 with REST's error body, before it is read whole.

Every path outside `/a2a/` goes to the wrapped application untouched.
"""

from __future__ import annotations

import re
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from django.conf import settings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a2a_face.agents import agent_card, public_agent
from a2a_face.handler import AGENT, PERSON, ProcessTasks
from vancetope.asgi_bearer import Scope, authenticated_person, refuse
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
            return
        await self.agents({**scope, PERSON: user, AGENT: agent}, replay(body, receive), send)


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
