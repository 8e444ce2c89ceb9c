"""`/a2a/<project>/<recipe>` under ASGI, in front of Django (as `/mcp` is): the Host header and
the API token are checked first (vancetope/asgi_bearer.py: a 401 with REST's body without a
valid one), then the agent is looked up for the person (a project they cannot see, a recipe
that is not public: a 404, card and endpoint alike), and the request goes to a Starlette app
of the SDK's pieces with the person and the agent in its scope:

    GET  /a2a/<project>/<recipe>/.well-known/agent-card.json   the agent's card
    POST /a2a/<project>/<recipe>                                JSON-RPC (1.0 and 0.3 methods)

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
        await self.agents({**scope, PERSON: user, AGENT: agent}, receive, send)
