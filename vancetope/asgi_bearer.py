"""The API token of a request answered in front of Django under ASGI (`/mcp`, `/a2a/…`): the
Host header checked as Django checks it, then `Authorization: Bearer <token>` authenticated
as REST authenticates it. A refusal is answered here with the body REST answers (400 for a
disallowed host, 401 without a valid token, 429 when the client's failed attempts are over
the limit), so a face behind it only ever sees an authenticated person.
"""

from __future__ import annotations

import json
from typing import Any

from triggers.webhooks.endpoint import host_allowed, security_headers
from vancetope.ratelimit import RateLimited, client_address
from vancetope.service_calls import call_service
from vancetope.tenancy.authentication import token_from_header
from vancetope.tenancy.services import authenticate_token_from

Scope = dict[str, Any]


async def authenticated_person(scope: Scope, send: Any) -> Any | None:
    """The person whose API token the request carries; None once a refusal is answered."""
    headers = {name.decode("latin-1").lower(): value for name, value in scope["headers"]}
    if not host_allowed(scope, headers):
        await refuse(send, 400, "bad-request", "the Host header is not allowed")
        return None
    header = headers.get("authorization", b"").decode("latin-1")
    raw = token_from_header(header) if header else None
    if raw is None:
        await refuse(send, 401, "unauthenticated", "send Authorization: Bearer <token>")
        return None
    client = client_address(
        str((scope.get("client") or ("", 0))[0]),
        headers.get("x-forwarded-for", b"").decode("latin-1"),
    )
    try:
        found = await call_service(authenticate_token_from, client, raw)
    except RateLimited as limited:
        extra = [(b"retry-after", str(limited.retry_after).encode())]
        await refuse(send, 429, "rate-limited", limited.message, extra)
        return None
    if found is None:
        await refuse(send, 401, "unauthenticated", "invalid or revoked API token")
        return None
    user, _ = found
    return user


async def refuse(
    send: Any,
    status: int,
    error: str,
    message: str,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """A JSON answer with REST's error body `{code, error, message}`."""
    payload = json.dumps({"code": status, "error": error, "message": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *security_headers(),
        *(extra or []),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="vancetope"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
