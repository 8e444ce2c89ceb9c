"""Shared pieces of the webhook tests: making a webhook over REST, delivering raw bodies."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.test import Client
from standardwebhooks import Webhook as Signer

from tests.conftest import Tenancy


def create_webhook(tenancy: Tenancy, body: dict[str, Any]) -> dict[str, Any]:
    response = tenancy.api().post("/api/webhooks", body, format="json")
    assert response.status_code == 201, response.json()
    return dict(response.json())


def deliver(webhook_id: str, body: bytes | str, **headers: str) -> Any:
    """A raw POST (the bytes as given), with headers by their HTTP names."""
    raw = body.encode() if isinstance(body, str) else body
    return Client().generic(
        "POST",
        f"/api/webhooks/{webhook_id}",
        raw,
        content_type="application/json",
        headers=headers,
    )


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
