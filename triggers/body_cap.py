"""The webhook body cap under ASGI: Django's ASGI handler buffers a whole request body before
any view runs, so an inbound delivery (`POST /api/webhooks/{id}`) is capped here first. A
Content-Length over VANCETOPE_WEBHOOK_MAX_BYTES is answered 413 unread; a body without one
(chunked) is read until it passes the cap (at most cap + one chunk), then answered 413 the same
way. Both leave their TriggerEvent through triggers.inbound.receive, as the view's own cap
does. Every other request passes through untouched."""

from __future__ import annotations

import json
import re
from typing import Any

from asgiref.sync import sync_to_async

from triggers import inbound

DELIVERY_PATH = re.compile(r"^/api/webhooks/([^/]+)$")
Scope = dict[str, Any]


class WebhookBodyCap:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        match = DELIVERY_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        limit = inbound.max_bytes()
        headers = {name.decode("latin-1").lower(): value for name, value in scope["headers"]}
        declared = headers.get("content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > limit:
            await self._refuse(match.group(1), scope, int(declared), send)
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
                await self._refuse(match.group(1), scope, size, send)
                return
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)

    async def _refuse(self, ref: str, scope: Scope, size: int, send: Any) -> None:
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
            if name.decode("latin-1").lower() in inbound.HEADERS
        }
        answer = await sync_to_async(inbound.receive, thread_sensitive=False)(
            ref, headers, None, size
        )
        payload = json.dumps(answer.body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})
