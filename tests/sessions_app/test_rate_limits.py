"""Rate limits over the WebSocket: past a user's limit a chat, a steer or a process-create is
an error 429 that says when to try again, nothing of it is queued or created, and the socket
stays open; a client address that tried too many wrong tokens is answered 429 and closed."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from processes.models import PendingMessage, ThinkProcess
from tests.support.ws import bearer, connect, open_session
from vancetope.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@database_sync_to_async
def pending_texts(public_id: str) -> list[str]:
    """Every message queued for the process, consumed or not, in order."""
    rows = PendingMessage.objects.filter(process_id=int(public_id.removeprefix("tp_")))
    return [row.payload["text"] for row in rows.order_by("seq")]


@database_sync_to_async
def processes_of(session_id: str) -> int:
    return ThinkProcess.objects.filter(session_id=int(session_id.removeprefix("sess_"))).count()


def assert_rate_limited(frame: dict, reply_to: str | None) -> None:
    assert frame["type"] == "error", frame
    assert frame["replyTo"] == reply_to
    assert (frame["data"]["code"], frame["data"]["error"]) == (429, "rate-limited")
    assert 1 <= frame["data"]["retryAfter"] <= 60
    assert "too many chat and steer messages" in frame["data"]["message"]


async def test_steers_past_the_limit_are_429_and_not_queued(alice, settings):
    settings.VANCETOPE_RATE_CHAT = "10/minute"
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice))["chatProcessId"]
    paused = await client.request("process-pause", {"processId": chat_id})
    assert paused["data"]["process"]["status"] == "PAUSED"
    # when: 25 steers back to back
    for n in range(25):
        frame = {"type": "process-steer", "id": f"s{n}", "data": {"processId": chat_id}}
        frame["data"]["message"] = f"m{n}"
        await client.ws.send_to(text_data=json.dumps(frame))
    replies = [await client.next_reply() for _ in range(25)]
    # then the first ten are queued, the other fifteen refused, each reply in order
    assert [reply["replyTo"] for reply in replies] == [f"s{n}" for n in range(25)]
    assert [reply["type"] for reply in replies[:10]] == ["process-steered"] * 10
    for n, reply in enumerate(replies[10:], start=10):
        assert_rate_limited(reply, f"s{n}")
    assert await pending_texts(chat_id) == [f"m{n}" for n in range(10)]
    # and a chat shares the limit: refused too, nothing queued, the socket still answers
    refused = await client.request("chat", {"text": "one more"})
    assert_rate_limited(refused, "c3")
    assert await pending_texts(chat_id) == [f"m{n}" for n in range(10)]
    detail = await client.request("process-get", {"processId": chat_id})
    assert detail["data"]["process"]["pending"] == 10
    await client.ws.disconnect()


async def test_chats_past_the_limit_are_429_and_not_queued(alice, settings):
    settings.VANCETOPE_RATE_CHAT = "3/minute"
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice))["chatProcessId"]
    # when
    answers = [await client.request("chat", {"text": f"hello {n}"}) for n in range(5)]
    # then
    assert [answer["type"] for answer in answers[:3]] == ["chat-accepted"] * 3
    for answer in answers[3:]:
        assert_rate_limited(answer, answer["replyTo"])
    assert await pending_texts(chat_id) == ["hello 0", "hello 1", "hello 2"]
    listing = await client.request("process-list")
    assert listing["type"] == "process-list"
    await client.ws.disconnect()


async def test_process_creates_past_the_limit_are_429_and_create_nothing(alice, settings):
    settings.VANCETOPE_RATE_PROCESS_CREATE = "2/minute"
    client = await connect(bearer(alice))
    session_id = (await open_session(client, alice))["session"]["id"]
    assert await processes_of(session_id) == 1  # the chat process does not count
    # when
    answers = [
        await client.request("process-create", {"recipe": "ford", "goal": f"g{n}", "start": False})
        for n in range(3)
    ]
    # then
    assert [answer["type"] for answer in answers[:2]] == ["process-created"] * 2
    refused = answers[2]
    assert (refused["type"], refused["data"]["code"]) == ("error", 429)
    assert "too many processes created" in refused["data"]["message"]
    assert refused["data"]["retryAfter"] >= 1
    assert await processes_of(session_id) == 3
    await client.ws.disconnect()


async def open_with_token(token: str) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Bearer {token}".encode())]
    communicator = WebsocketCommunicator(application, "/ws/brain/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def test_wrong_tokens_past_the_limit_are_429_then_closed(alice, settings):
    settings.VANCETOPE_RATE_TOKEN_FAILURES = "3/minute"
    # given three tries of a wrong token, each closed as unauthenticated
    for _ in range(3):
        socket = await open_with_token("vt_wrong-token")
        assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}
    # when a fourth try of it comes from the same address
    socket = await open_with_token("vt_wrong-token")
    # then it is told to wait, and closed
    frame = json.loads(await socket.receive_from(timeout=5))
    assert (frame["type"], frame["data"]["code"], frame["data"]["error"]) == (
        "error",
        429,
        "rate-limited",
    )
    assert frame["data"]["retryAfter"] >= 1
    assert "too many wrong API tokens" in frame["data"]["message"]
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4429}
    # and a valid token from the same address is not refused for that client's failures
    right = await open_with_token(alice.token)
    assert await right.receive_nothing(timeout=0.3)
    await right.disconnect()
