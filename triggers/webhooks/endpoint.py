"""Inbound deliveries under ASGI: `POST /api/webhooks/{id}` is answered here, in front of
Django's handler, by triggers.webhooks.inbound.receive (the one use case of a delivery). Every other
request, and every other method of that path, goes to Django untouched.

Django's request stack cost about six times a delivery's own work (bench/webhooks.py: 7 ms of
CPU through it against 1 ms for `receive` itself, most of it a new thread per request for the
sync middleware, the request object and the request signals), and a delivery uses none of what
it gives: no user, no session, no CSRF check, no template. What of it a delivery does need is
done here, the same way:

- the Host header is checked as Django checks it (`HttpRequest.get_host`: ALLOWED_HOSTS,
  USE_X_FORWARDED_HOST, DEBUG's defaults): a disallowed host is a 400, logged on
  `django.security.DisallowedHost`, and is no delivery (no TriggerEvent), as before;
- the body is capped before it is read: a Content-Length over VANCETOPE_WEBHOOK_MAX_BYTES is
  answered 413 unread; a body without one (chunked) is read until it passes the cap (at most
  cap + one chunk), then answered 413 the same way; both leave their TriggerEvent;
- `receive` runs in a worker thread of the event loop's executor through `call_service`, which
  drops broken or expired database connections before and after, as Django's request signals
  do; each of those reused threads keeps its connection (a thread per request opened one each);
- the answer is JSON with the headers Django's security and clickjacking middleware add
  (nosniff, Referrer-Policy, Cross-Origin-Opener-Policy, X-Frame-Options); an unexpected error
  is logged on `django.request` and answered 500, as Django would.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest

from triggers.webhooks import inbound
from vancetope.service_calls import call_service

DELIVERY_PATH = re.compile(r"^/api/webhooks/([^/]+)$")
Scope = dict[str, Any]

security_log = logging.getLogger("django.security.DisallowedHost")
request_log = logging.getLogger("django.request")
BAD_HOST = {"code": 400, "error": "bad-request", "message": "the Host header is not allowed"}
INTERNAL = {"code": 500, "error": "internal", "message": "internal error"}


class WebhookEndpoint:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        match = DELIVERY_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        ref = match.group(1)
        headers = {name.decode("latin-1").lower(): value for name, value in scope["headers"]}
        if not host_allowed(scope, headers):
            await _answer(send, 400, BAD_HOST, close=True)
            return
        limit = inbound.max_bytes()
        declared = headers.get("content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > limit:
            await self._deliver(send, ref, headers, None, int(declared))
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = bool(message.get("more_body"))
            if size > limit:
                await self._deliver(send, ref, headers, None, size)
                return
        await self._deliver(send, ref, headers, b"".join(chunks), size)

    async def _deliver(
        self, send: Any, ref: str, headers: dict[str, bytes], body: bytes | None, size: int
    ) -> None:
        """Answer one delivery; `body` None: over the cap, unread (the connection is closed
        after the answer, since the rest of the body was never read)."""
        given = {
            name: value.decode("latin-1")
            for name, value in headers.items()
            if name in inbound.HEADERS
        }
        try:
            answer = await call_service(inbound.receive, ref, given, body, size)
        except Exception:
            request_log.exception("Internal Server Error: /api/webhooks/%s", ref)
            await _answer(send, 500, INTERNAL)
            return
        await _answer(send, answer.status, answer.body, close=body is None)


def host_allowed(scope: Scope, headers: dict[str, bytes]) -> bool:
    """Django's own check of the Host header (HttpRequest.get_host), on the few META keys
    it reads."""
    request = HttpRequest()
    server = scope.get("server") or ("unknown", "0")
    request.META = {"SERVER_NAME": str(server[0]), "SERVER_PORT": str(server[1])}
    for name in ("host", "x-forwarded-host"):
        if name in headers:
            request.META["HTTP_" + name.upper().replace("-", "_")] = headers[name].decode("latin-1")
    try:
        request.get_host()
    except DisallowedHost as exc:
        security_log.error(str(exc))
        return False
    return True


def security_headers() -> list[tuple[bytes, bytes]]:
    """What SecurityMiddleware and XFrameOptionsMiddleware add to a plain answer, by the
    same settings."""
    found: list[tuple[str, str]] = []
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        found.append(("x-content-type-options", "nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        text = policy if isinstance(policy, str) else ",".join(policy)
        found.append(("referrer-policy", text))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        found.append(("cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY))
    found.append(("x-frame-options", str(getattr(settings, "X_FRAME_OPTIONS", "DENY")).upper()))
    return [(name.encode(), value.encode("latin-1")) for name, value in found]


async def _answer(send: Any, status: int, body: dict[str, Any], *, close: bool = False) -> None:
    payload = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *security_headers(),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
