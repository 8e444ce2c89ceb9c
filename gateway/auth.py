"""WebSocket auth: `Authorization: Bearer`, `?token=`, or the Django session cookie."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host

from vancetope.ratelimit import RateLimited, client_address
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
            forwarded = dict(scope.get("headers", [])).get(b"x-forwarded-for", b"")
            client = client_address((scope.get("client") or [""])[0], forwarded.decode("latin-1"))
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


DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _origin_key(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin such as `https://brain.example:8443`; None when it is
    not one (`null`, no host)."""
    try:
        parsed = urlsplit(url.strip())
        port = parsed.port
    except ValueError:
        return None
    scheme = {"ws": "http", "wss": "https"}.get(parsed.scheme, parsed.scheme)
    if scheme not in {"http", "https"} or not parsed.hostname:
        return None
    return scheme, parsed.hostname.lower(), port or DEFAULT_PORTS[scheme]


class BrainOriginValidator:
    """Browsers always send Origin on a WebSocket; it must be the Brain's own origin (the
    host and port the socket was opened on, a host of ALLOWED_HOSTS) or one listed in
    CSRF_TRUSTED_ORIGINS, as Django's CSRF check demands of a form: another port on the same
    host is another site and may not ride a user's cookie. Non-browser clients (the CLI,
    scripts) send none and authenticate with a token, so a missing Origin is allowed."""

    def __init__(
        self, application: Any, allowed_hosts: list[str], trusted_origins: list[str]
    ) -> None:
        self.application = application
        self.allowed_hosts = allowed_hosts
        self.trusted = {key for key in map(_origin_key, trusted_origins) if key is not None}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not self.valid(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)

    def valid(self, scope: dict[str, Any]) -> bool:
        headers = dict(scope.get("headers") or [])
        if b"origin" not in headers:
            return True
        origin = _origin_key(headers[b"origin"].decode("latin-1"))
        if origin is None:
            return False
        if origin in self.trusted:
            return True
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        if not host:
            return False
        hostname, port = split_domain_port(host)
        if not hostname or not validate_host(hostname, self.allowed_hosts):
            return False
        # The origin the socket was opened on: its scheme follows the socket's (ws → http).
        scheme = "https" if scope.get("scheme") in {"wss", "https"} else "http"
        here = (scheme, hostname.strip("[]"), int(port) if port else DEFAULT_PORTS[scheme])
        return origin[0] == here[0] and origin[1].strip("[]") == here[1] and origin[2] == here[2]


def origin_validator(application: Any) -> BrainOriginValidator:
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return BrainOriginValidator(application, allowed, list(settings.CSRF_TRUSTED_ORIGINS))
