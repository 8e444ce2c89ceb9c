"""channels' session middleware, without its wrapper around every WebSocket frame sent.

channels' `SessionMiddleware` hands the application a `send` that, before every message, reads
whether the Django session was modified and is empty (two lookups through a `LazyObject`, each
raising and catching an AttributeError: about 14 µs) to save it and set its cookie; it does so
only for `http.response.start`. A WebSocket never sends one, so for a socket the wrapper does
nothing but cost: a chat turn sends several frames, and the server loop paid it on each, more
the more sockets it serves. Here a WebSocket's session is resolved as before (the cookie user
of the web UI) and its frames go to the server's own `send`; HTTP is left as channels has it.
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware


class WebsocketSessionMiddleware(SessionMiddleware):  # type: ignore[misc]
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            return await super().__call__(scope, receive, send)
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def auth_middleware_stack(inner: Any) -> Any:
    """channels' AuthMiddlewareStack with the session middleware above."""
    return CookieMiddleware(WebsocketSessionMiddleware(AuthMiddleware(inner)))
