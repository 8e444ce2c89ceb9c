"""`/mcp` under ASGI, in front of Django (as triggers/webhooks/endpoint.py is): the Host header
and the API token (`Authorization: Bearer <token>`, as REST) are checked before the SDK sees
the request (vancetope/asgi_bearer.py: none, or a wrong one, is a 401 with the body REST
answers), then a POST's body is read and checked by vancetope/asgi_jsonrpc.py, as the A2A
face's is: at most VANCETOPE_MAX_FRAME_BYTES (a longer one is a 413 with REST's error body), and
holding only what REST and the WebSocket take (a NUL, a lone surrogate, a number too long to
read, a body nested too deeply or not UTF-8 are JSON-RPC errors naming the field, a tool's
argument by its name). Then the request goes to the SDK's Streamable HTTP session manager with
the person in its scope. Every other path goes to the wrapped application untouched.

The session manager runs in a task of the server's event loop, started by the first request
(daphne serves no ASGI lifespan), and bound to the loop that started it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from mcp_face.identity import SCOPE_KEY
from mcp_face.server import build_server, session_manager
from vancetope.asgi_bearer import Scope, authenticated_person
from vancetope.asgi_jsonrpc import INVALID_REQUEST, Refusal, answer_json, read_request, replay
from vancetope.infra.mcp_sessions import PersonCappedSessionManager

PATHS = {"/mcp", "/mcp/"}
SESSION_HEADER = MCP_SESSION_ID_HEADER.encode("ascii")


class McpEndpoint:
    def __init__(self, app: Any, server: MCPServer | None = None) -> None:
        self.app = app
        self.server = server
        self.manager: PersonCappedSessionManager | None = None
        self.running: asyncio.Future[None] | None = None
        self.lock = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") not in PATHS:
            await self.app(scope, receive, send)
            return
        user = await authenticated_person(scope, send)
        if user is None:
            return
        # The SDK binds a session to the principal that opened it (the person, whoever's
        # token of theirs is used), so another person cannot use its id.
        principal = AccessToken(
            token="", client_id=f"user_{user.pk}", scopes=[], subject=str(user.pk)
        )
        person = AuthenticatedUser(principal)
        inner = {**scope, SCOPE_KEY: user, "user": person}
        if scope.get("method") == "POST":
            body = await read_request(
                scope, receive, send, render=render_refusal, field_name=argument_name
            )
            if body is None:
                return
            receive = replay(body, receive)
        manager = await self._manager()
        opening = not any(name == SESSION_HEADER for name, _ in scope.get("headers", []))
        if opening and manager.refusing(authorization_context(person)):
            await refuse_session(send, manager.per_person)
            return
        await manager.handle_request(inner, receive, send)

    async def _manager(self) -> PersonCappedSessionManager:
        async with self.lock:
            if self.manager is None:
                manager = session_manager(self.server or build_server())
                started = asyncio.get_running_loop().create_future()
                self.running = asyncio.ensure_future(_run(manager, started))
                await started
                self.manager = manager
            return self.manager


def argument_name(method: str, field: str) -> str:
    """A field of a tool call's `params` as the tools name it: an argument by its name
    (`goal`, `values.topic`), as a tool error's `field` names it."""
    return field.removeprefix("arguments.") if method == "tools/call" else field


async def refuse_session(send: Any, cap: int) -> None:
    """A new session while the person holds `cap` sessions, every one in use (a request in
    flight or an open stream): a 429 with the JSON-RPC error (-32600) saying so."""
    message = (
        f"too many MCP sessions: you have {cap} open and in use "
        "(VANCETOPE_MCP_SESSIONS_PER_PERSON); end one (DELETE /mcp with its Mcp-Session-Id) "
        "or reuse it"
    )
    error = {"code": INVALID_REQUEST, "message": message, "data": {"limit": cap}}
    await answer_json(send, 429, {"jsonrpc": "2.0", "id": None, "error": error})


async def render_refusal(send: Any, refusal: Refusal) -> None:
    """A refusal as the SDK answers a request it cannot read: an HTTP 400 with the JSON-RPC
    error (the SDK's client hands it to the caller as the error of its request)."""
    payload = {"jsonrpc": "2.0", "id": refusal.request_id, "error": refusal.error()}
    await answer_json(send, 400, payload)


async def _run(manager: PersonCappedSessionManager, started: asyncio.Future[None]) -> None:
    async with manager.run():
        started.set_result(None)
        await asyncio.Event().wait()  # until the loop ends
