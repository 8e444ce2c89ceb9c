"""Shared pieces of the webhook tests: making a webhook over REST, delivering raw bodies
through the ASGI application as daphne serves it (vancetope.asgi.application)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from standardwebhooks import Webhook as Signer

from tests.support.tenancy import Tenancy


def create_webhook(tenancy: Tenancy, body: dict[str, Any]) -> dict[str, Any]:
    response = tenancy.api().post("/api/webhooks", body, format="json")
    assert response.status_code == 201, response.json()
    return dict(response.json())


@dataclass
class Delivered:
    """An HTTP answer as the tests read it: status, raw body, headers."""

    status_code: int
    content: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.content)

    def items(self) -> list[tuple[str, str]]:
        return list(self.headers.items())


def asgi_scope(path: str, headers: list[tuple[bytes, bytes]], method: str = "POST") -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }


async def read_answer(communicator: ApplicationCommunicator) -> Delivered:
    start = await communicator.receive_output(30)
    assert start["type"] == "http.response.start"
    body = b""
    while True:
        message = await communicator.receive_output(30)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in start["headers"]}
    return Delivered(int(start["status"]), body, headers)


async def _post(path: str, raw: bytes, headers: list[tuple[bytes, bytes]]) -> Delivered:
    from vancetope.asgi import application

    communicator = ApplicationCommunicator(application, asgi_scope(path, headers))
    await communicator.send_input({"type": "http.request", "body": raw, "more_body": False})
    answer = await read_answer(communicator)
    await communicator.wait(30)
    return answer


def deliver(webhook_id: str, body: bytes | str, **headers: str) -> Delivered:
    """A raw POST (the bytes as given), with headers by their HTTP names, through the ASGI
    application."""
    raw = body.encode() if isinstance(body, str) else body
    sent = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(raw)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in headers.items()),
    ]
    return async_to_sync(_post)(f"/api/webhooks/{webhook_id}", raw, sent)


def signed_headers(
    secret: str, msg_id: str, body: str, at: datetime | None = None
) -> dict[str, str]:
    """Standard Webhooks headers made by the package's own signer."""
    at = at or datetime.now(tz=UTC)
    signature = Signer(secret).sign(msg_id, at, body)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }


def payload(**values: Any) -> str:
    return json.dumps(values)
