"""WebSocket auth: `Authorization: Bearer`, `?token=`, or the Django session cookie."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import OriginValidator
from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from vancetope.ratelimit import RateLimited
from vancetope.tenancy.authentication import token_from_header
from vancetope.tenancy.services import authenticate_token_from


def token_in_scope(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return token_from_header(value.decode("latin-1")) or ""
    query = parse_qs(scope.get("query_string", b"").decode())
    tokens = query.get("token")
    return tokens[0] if tokens else None


class TokenAuthMiddleware(BaseMiddleware):
    """Runs inside AuthMiddlewareStack: a token, when given, decides the user (a wrong token
    is anonymous, even with a valid cookie); without one the cookie user stays."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        token = token_in_scope(scope)
        if token is not None:
            client = (scope.get("client") or [""])[0]
            throttled = None
            try:
                found = await database_sync_to_async(authenticate_token_from)(client, token)
            except RateLimited as limited:
                # Too many wrong tokens from this address: the consumer answers 429 and closes.
                found, throttled = None, limited
            user, token_id = found if found else (AnonymousUser(), None)
            # The socket closes when this token is revoked (vancetope/tenancy/revocation.py).
            scope = {**scope, "user": user, "api_token_id": token_id, "auth_throttled": throttled}
        return await super().__call__(scope, receive, send)


class BrainOriginValidator(OriginValidator):
    """Browsers always send Origin on a WebSocket, and it must be one of ALLOWED_HOSTS (no
    cross-site socket may ride a user's cookie). Non-browser clients (the CLI, scripts) send
    none and authenticate with a token, so a missing Origin is allowed."""

    def valid_origin(self, parsed_origin: Any) -> bool:
        if parsed_origin is None:
            return True
        return super().valid_origin(parsed_origin)


def origin_validator(application: Any) -> BrainOriginValidator:
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return BrainOriginValidator(application, allowed)
