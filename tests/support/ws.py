"""A WebSocket client speaking docs/protocol.md frames through the real ASGI stack (auth, origin,
routing), and the helpers consumer tests share."""

from __future__ import annotations

import json
from typing import Any

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from processes.models import ThinkProcess
from tests.support.tenancy import Tenancy
from vancetope.asgi import application

FINGERPRINT = {"machineId": "machine-a", "workingDir": "/home/a/project"}


class Client:
    """A WebSocket client speaking docs/protocol.md frames."""

    def __init__(self, communicator: WebsocketCommunicator) -> None:
        self.ws = communicator
        self.counter = 0
        self.events: list[dict[str, Any]] = []

    async def request(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its reply (or error), collecting events meanwhile."""
        self.counter += 1
        request_id = f"c{self.counter}"
        frame: dict[str, Any] = {"type": kind, "id": request_id}
        if data is not None:
            frame["data"] = data
        await self.ws.send_to(text_data=json.dumps(frame))
        return await self.reply_to(request_id)

    async def reply_to(self, request_id: str) -> dict[str, Any]:
        while True:
            frame = json.loads(await self.ws.receive_from(timeout=10))
            if frame.get("type") == "event":
                self.events.append(frame)
            elif frame.get("replyTo") == request_id:
                return frame

    async def next_reply(self) -> dict[str, Any]:
        """The next frame that is not an event (for frames sent without an id)."""
        while True:
            frame = json.loads(await self.ws.receive_from(timeout=10))
            if frame.get("type") != "event":
                return frame
            self.events.append(frame)

    async def event(self, name: str, after: int = 0, **match: Any) -> dict[str, Any]:
        """The first event of that name after seq `after` whose data contains `match`
        (already collected or still to come)."""

        def wanted(frame: dict[str, Any]) -> bool:
            return (
                frame["event"] == name
                and frame["seq"] > after
                and match.items() <= frame["data"].items()
            )

        for frame in self.events:
            if wanted(frame):
                return frame
        while True:
            frame = json.loads(await self.ws.receive_from(timeout=10))
            if frame.get("type") == "event":
                self.events.append(frame)
                if wanted(frame):
                    return frame


async def connect(headers: list[tuple[bytes, bytes]], path: str = "/ws/brain/") -> Client:
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    return Client(communicator)


def bearer(tenancy: Tenancy) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {tenancy.token}".encode())]


async def open_session(client: Client, tenancy: Tenancy, **extra: Any) -> dict[str, Any]:
    reply = await client.request(
        "session-create",
        {"clientType": "cli", "projectId": tenancy.project_id, "fingerprint": FINGERPRINT, **extra},
    )
    assert reply["type"] == "session-created", reply
    return reply["data"]


@database_sync_to_async
def process_row(public_id: str) -> ThinkProcess:
    return ThinkProcess.objects.get(pk=int(public_id.removeprefix("tp_")))
