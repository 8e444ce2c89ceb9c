"""The inbound endpoint under ASGI (vancetope.asgi.application, as daphne runs it, in front of
Django's handler): a declared length over the cap is refused without reading a byte, a
chunked body without a length is read no further than the cap; both are a 413 with a
TriggerEvent; a body within the cap is delivered whole, answered with Django's security
headers; a Host Django would refuse is refused the same way; every other method of the path
still reaches the REST views."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async

from tests.triggers.webhook_helpers import asgi_scope, create_webhook, read_answer
from triggers.models import RunLog, TriggerEvent
from triggers.webhooks import inbound
from vancetope.asgi import application

UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.build}"}}


def sync(function: Any) -> Any:
    return database_sync_to_async(function)


@pytest.mark.django_db(transaction=True)
async def test_a_declared_length_over_the_cap_is_refused_unread(alice, settings):
    settings.VANCETOPE_WEBHOOK_MAX_BYTES = 100
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    headers = [(b"content-length", b"5000000"), (b"x-webhook-secret", hook["secret"].encode())]
    communicator = ApplicationCommunicator(application, asgi_scope(hook["url"], headers))
    # nothing of the body is sent: the answer must come without it
    answer = await read_answer(communicator)
    assert answer.status_code == 413
    assert answer.json()["message"] == "body over 100 bytes"
    assert answer.headers["connection"] == "close"
    event = await sync(lambda: TriggerEvent.objects.get())()
    assert (event.status_code, event.body_size, event.webhook_ref) == (413, 5000000, hook["id"])
    assert not await sync(RunLog.objects.exists)()


@pytest.mark.django_db(transaction=True)
async def test_a_chunked_body_is_read_no_further_than_the_cap(alice, settings):
    settings.VANCETOPE_WEBHOOK_MAX_BYTES = 100
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    headers = [(b"x-webhook-secret", hook["secret"].encode())]
    communicator = ApplicationCommunicator(application, asgi_scope(hook["url"], headers))
    # a body in 60-byte chunks, no length: the second chunk passes the cap
    for _ in range(2):
        await communicator.send_input(
            {"type": "http.request", "body": b"x" * 60, "more_body": True}
        )
    answer = await read_answer(communicator)
    assert answer.status_code == 413
    event = await sync(lambda: TriggerEvent.objects.get())()
    assert (event.status_code, event.body_size) == (413, 120)


@pytest.mark.django_db(transaction=True)
async def test_a_chunked_body_within_the_cap_is_delivered_whole_with_the_security_headers(alice):
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    headers = [
        (b"x-webhook-secret", hook["secret"].encode()),
        (b"content-type", b"application/json"),
    ]
    communicator = ApplicationCommunicator(application, asgi_scope(hook["url"], headers))
    await communicator.send_input({"type": "http.request", "body": b'{"build":', "more_body": True})
    await communicator.send_input({"type": "http.request", "body": b" 5}", "more_body": False})
    answer = await read_answer(communicator)
    assert answer.status_code == 200, answer.content
    run = await sync(lambda: RunLog.objects.get())()
    assert answer.json() == {"runId": run.public_id}
    # the headers Django's security and clickjacking middleware put on every answer
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "same-origin"
    assert answer.headers["cross-origin-opener-policy"] == "same-origin"
    assert answer.headers["x-frame-options"] == "DENY"
    assert "connection" not in answer.headers


@pytest.mark.django_db(transaction=True)
async def test_a_host_django_would_refuse_is_a_400_and_no_delivery(alice, caplog):
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    scope = asgi_scope(hook["url"], [(b"x-webhook-secret", hook["secret"].encode())])
    scope["headers"] = [(b"host", b"evil.example"), *scope["headers"][1:]]
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b'{"build": 5}'})
    answer = await read_answer(communicator)
    assert answer.status_code == 400
    assert answer.json()["error"] == "bad-request"
    assert "evil.example" in caplog.text
    assert not await sync(TriggerEvent.objects.exists)()
    assert not await sync(RunLog.objects.exists)()


@pytest.mark.django_db(transaction=True)
async def test_an_unexpected_error_is_a_logged_500(alice, monkeypatch, caplog):
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})

    def broken(*args: Any) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(inbound, "receive", broken)
    communicator = ApplicationCommunicator(
        application, asgi_scope(hook["url"], [(b"x-webhook-secret", hook["secret"].encode())])
    )
    await communicator.send_input({"type": "http.request", "body": b'{"build": 5}'})
    answer = await read_answer(communicator)
    assert answer.status_code == 500
    assert answer.json() == {"code": 500, "error": "internal", "message": "internal error"}
    assert "the database went away" in caplog.text


@pytest.mark.django_db(transaction=True)
async def test_the_other_methods_of_the_path_still_reach_the_rest_views(alice):
    hook = await sync(create_webhook)(alice, {"name": "c", "mode": "secret", "action": UNBLOCK})
    token = [(b"authorization", f"Bearer {alice.token}".encode())]
    communicator = ApplicationCommunicator(application, asgi_scope(hook["url"], token, "GET"))
    await communicator.send_input({"type": "http.request", "body": b""})
    answer = await read_answer(communicator)
    assert answer.status_code == 200
    assert answer.json()["id"] == hook["id"]
    assert "secret" not in answer.json()
