"""The body cap under ASGI (vancetope.asgi.application, as daphne runs it): a declared length
over the cap is refused without reading a byte, a chunked body without a length is read no
further than the cap; both are a 413 with a TriggerEvent, and a body within the cap still
reaches the view whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator

from tests.triggers.webhook_helpers import create_webhook
from triggers.models import RunLog, TriggerEvent
from vancetope.asgi import application

UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.build}"}}


def scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }


async def answer(communicator: ApplicationCommunicator) -> tuple[int, dict[str, Any]]:
    start = await communicator.receive_output(10)
    assert start["type"] == "http.response.start"
    body = b""
    while True:
        message = await communicator.receive_output(10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    return int(start["status"]), json.loads(body)


@pytest.mark.django_db(transaction=True)
async def test_a_declared_length_over_the_cap_is_refused_unread(alice, settings):
    settings.VANCETOPE_WEBHOOK_MAX_BYTES = 100
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    headers = [(b"content-length", b"5000000"), (b"x-webhook-secret", hook["secret"].encode())]
    communicator = ApplicationCommunicator(application, scope(hook["url"], headers))
    # nothing of the body is sent: the answer must come without it
    status, body = await answer(communicator)
    assert status == 413
    assert body["message"] == "body over 100 bytes"
    event = await sync(lambda: TriggerEvent.objects.get())()
    assert (event.status_code, event.body_size, event.webhook_ref) == (413, 5000000, hook["id"])
    assert not await sync(RunLog.objects.exists)()


@pytest.mark.django_db(transaction=True)
async def test_a_chunked_body_is_read_no_further_than_the_cap(alice, settings):
    settings.VANCETOPE_WEBHOOK_MAX_BYTES = 100
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    headers = [(b"x-webhook-secret", hook["secret"].encode())]
    communicator = ApplicationCommunicator(application, scope(hook["url"], headers))
    # a body in 60-byte chunks, no length: the second chunk passes the cap
    for _ in range(2):
        await communicator.send_input(
            {"type": "http.request", "body": b"x" * 60, "more_body": True}
        )
    status, _ = await answer(communicator)
    assert status == 413
    event = await sync(lambda: TriggerEvent.objects.get())()
    assert (event.status_code, event.body_size) == (413, 120)


@pytest.mark.django_db(transaction=True)
async def test_a_chunked_body_within_the_cap_reaches_the_view_whole(alice):
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    headers = [
        (b"x-webhook-secret", hook["secret"].encode()),
        (b"content-type", b"application/json"),
    ]
    communicator = ApplicationCommunicator(application, scope(hook["url"], headers))
    await communicator.send_input({"type": "http.request", "body": b'{"build":', "more_body": True})
    await communicator.send_input({"type": "http.request", "body": b" 5}", "more_body": False})
    status, body = await answer(communicator)
    assert status == 200, body
    run = await sync(lambda: RunLog.objects.get())()
    assert body == {"runId": run.public_id}


def sync(function: Any) -> Any:
    from channels.db import database_sync_to_async

    return database_sync_to_async(function)
