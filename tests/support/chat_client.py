"""A fake WebSocket for `vance chat`'s client, and the events it is fed."""

from __future__ import annotations

import json
from typing import Any


class FakeSocket:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send(self, raw: str) -> None:
        self.sent.append(json.loads(raw))


def event(seq: int, name: str, **data: Any) -> dict[str, Any]:
    return {"type": "event", "seq": seq, "event": name, "data": data}
