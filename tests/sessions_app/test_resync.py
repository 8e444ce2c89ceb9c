"""Resync over the WebSocket (PROTOCOL.md: session-resume with sinceSeq → missed[]).

A client that disconnects and reconnects 50 times while a process streams receives every event
exactly once, in seq order, after resync. The chat process streams slowly because the scripted
LLM's rule has a `delay_per_delta`; the session's onDisconnect is KEEP_OPEN, so dropping the
socket does not suspend (and interrupt) the running turn.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from processes.models import ConversationMessage
from sessions_app.models import Session
from tests.conftest import Tenancy
from tests.sessions_app.test_consumer import FINGERPRINT, bearer
from vancetope.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# Every receive is bounded. The app under test is cancelled when a receive times out, so this
# is a failure bound, never a wait the test relies on.
RECEIVE_TIMEOUT = 15.0
RECONNECTS = 50
# Replies queued behind the one streaming while reconnects remain, so the stream never runs dry.
QUEUED_AHEAD = 1
# How long the client stays away before it reconnects (seconds), so missed[] varies in size.
OFFLINE_PAUSES = [0.0, 0.0, 0.0, 0.01, 0.05, 0.2]
STORY_WORDS = 320
DELAY_PER_DELTA = 0.006


def story_reply(words: int) -> str:
    """Distinct words with mixed whitespace, so a lost, doubled or swapped delta shows."""
    parts = []
    for index in range(words):
        separator = "\n" if index % 25 == 24 else "  " if index % 7 == 6 else " "
        parts.append(f"w{index:03d}{separator}")
    return "".join(parts).rstrip()


@pytest.fixture
def slow_story(settings: Any, tmp_path: Path) -> str:
    """Point the scripted provider at a script whose `story` replies stream word by word."""
    reply = story_reply(STORY_WORDS)
    script = tmp_path / "slow-story.yaml"
    script.write_text(
        yaml.safe_dump(
            [{"match": "^story", "reply": reply, "delay_per_delta": DELAY_PER_DELTA}],
            width=1_000_000,
        ),
        encoding="utf-8",
    )
    settings.VANCETOPE_LLM = "scripted"
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    return reply


class Socket:
    """One WebSocket connection; every event it receives is appended to `seen` (shared by
    all the sockets of one client, so `seen` is what the client saw over its lifetime)."""

    def __init__(self, ws: WebsocketCommunicator, seen: list[dict[str, Any]]) -> None:
        self.ws = ws
        self.seen = seen
        self.counter = 0
        self.replies: dict[str, dict[str, Any]] = {}

    @classmethod
    async def open(cls, tenancy: Tenancy, seen: list[dict[str, Any]]) -> Socket:
        ws = WebsocketCommunicator(application, "/ws/brain/", headers=bearer(tenancy))
        connected, _ = await ws.connect(timeout=RECEIVE_TIMEOUT)
        assert connected
        return cls(ws, seen)

    async def send(self, kind: str, data: dict[str, Any] | None = None) -> str:
        self.counter += 1
        request_id = f"r{self.counter}"
        frame: dict[str, Any] = {"type": kind, "id": request_id}
        if data is not None:
            frame["data"] = data
        await self.ws.send_to(text_data=json.dumps(frame))
        return request_id

    async def frame(self) -> dict[str, Any]:
        frame = json.loads(await self.ws.receive_from(timeout=RECEIVE_TIMEOUT))
        if frame.get("type") == "event":
            self.seen.append(frame)
        else:
            self.replies[frame.get("replyTo")] = frame
        return frame

    async def reply(self, request_id: str) -> dict[str, Any]:
        while request_id not in self.replies:
            await self.frame()
        reply = self.replies.pop(request_id)
        assert reply["type"] != "error", reply
        return reply

    async def request(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.reply(await self.send(kind, data))

    async def events(self, count: int) -> None:
        received = 0
        while received < count:
            if (await self.frame()).get("type") == "event":
                received += 1

    async def drop(self) -> None:
        """Go away abruptly: whatever the server sent that was not read yet is lost."""
        await self.ws.disconnect(code=1006, timeout=RECEIVE_TIMEOUT)


def last_seq(seen: list[dict[str, Any]]) -> int:
    return seen[-1]["seq"] if seen else 0


def replies_streamed(seen: list[dict[str, Any]], process_id: str) -> tuple[list[str], list[str]]:
    """Per assistant reply of the process: the joined chat-delta texts, and the chat-message."""
    streamed, messages, current = [], [], []
    for frame in seen:
        data = frame["data"]
        if data.get("processId") != process_id:
            continue
        if frame["event"] == "chat-delta":
            current.append(data["text"])
        elif frame["event"] == "chat-message" and data["role"] == "assistant":
            streamed.append("".join(current))
            messages.append(data["text"])
            current = []
    assert current == [], "deltas after the last assistant message"
    return streamed, messages


def assistant_count(seen: list[dict[str, Any]], process_id: str) -> int:
    return sum(
        1
        for frame in seen
        if frame["event"] == "chat-message"
        and frame["data"]["processId"] == process_id
        and frame["data"]["role"] == "assistant"
    )


def idle_after_last_reply(seen: list[dict[str, Any]], process_id: str) -> bool:
    for frame in reversed(seen):
        if frame["data"].get("processId") != process_id:
            continue
        if frame["event"] == "process-status":
            if frame["data"]["status"] == "IDLE":
                return True
            continue
        return False
    return False


@database_sync_to_async
def stored_last_seq(session_id: str) -> int:
    return Session.objects.get(pk=int(session_id.removeprefix("sess_"))).last_seq


@database_sync_to_async
def stored_assistant_messages(process_id: str) -> list[str]:
    rows = ConversationMessage.objects.filter(
        process_id=int(process_id.removeprefix("tp_")), role="assistant"
    ).order_by("index")
    return [row.content for row in rows]


async def wait_until_idle_and_complete(
    socket: Socket, session_id: str, chat_id: str, chats: int
) -> None:
    """Read until every chat is answered, the chat process is IDLE and nothing is left."""
    while True:
        if assistant_count(socket.seen, chat_id) == chats and idle_after_last_reply(
            socket.seen, chat_id
        ):
            stored = await stored_last_seq(session_id)
            assert last_seq(socket.seen) <= stored
            if last_seq(socket.seen) == stored:
                return
        await socket.frame()


def assert_exactly_once_in_order(seen: list[dict[str, Any]], stored: int) -> None:
    seqs = [frame["seq"] for frame in seen]
    duplicated = sorted({seq for seq in seqs if seqs.count(seq) > 1})
    missing = sorted(set(range(1, stored + 1)) - set(seqs))
    assert not duplicated, f"events seen more than once: {duplicated}"
    assert not missing, f"events never seen: {missing}"
    assert seqs == list(range(1, stored + 1)), "events out of order"


async def test_fifty_reconnects_while_streaming_see_every_event_once_in_order(
    alice, slow_story, monkeypatch
):
    import sessions_app.consumers as C

    real = C.events_since
    stats = {"gap": 0, "gapn": 0, "catch": 0, "catchn": 0}

    def spy(sid, since, until=None):
        out = real(sid, since, until)
        k = "gap" if until is not None else "catch"
        stats[k] += 1
        stats[k + "n"] += len(out)
        return out

    monkeypatch.setattr(C, "events_since", spy)
    started = time.monotonic()
    rng = random.Random(50)
    seen: list[dict[str, Any]] = []
    socket = await Socket.open(alice, seen)
    created = await socket.request(
        "session-create",
        {
            "clientType": "cli",
            "projectId": alice.project_id,
            "fingerprint": FINGERPRINT,
            "onDisconnect": "KEEP_OPEN",
        },
    )
    session_id = created["data"]["session"]["id"]
    chat_id = created["data"]["chatProcessId"]
    assert created["data"]["session"]["onDisconnect"] == "KEEP_OPEN"
    chats = 0

    async def keep_streaming() -> None:
        # Queue stories so one is streaming and QUEUED_AHEAD wait behind it.
        nonlocal chats
        while chats - assistant_count(seen, chat_id) < 1 + QUEUED_AHEAD:
            chats += 1
            await socket.request("chat", {"text": f"story {chats}"})

    await keep_streaming()
    await socket.events(5)
    statuses_at_resume = []
    for attempt in range(RECONNECTS):
        # given a client that read a few frames (sometimes none) and then lost the socket
        await keep_streaming()
        await socket.events(rng.choice([0, 1, 2, 3, 5, 8, 13]))
        await socket.drop()
        await asyncio.sleep(rng.choice(OFFLINE_PAUSES))
        # when it comes back and asks for what it missed since the last seq it saw
        socket = await Socket.open(alice, seen)
        since = last_seq(seen)
        resume = await socket.send(
            "session-resume",
            {"sessionId": session_id, "fingerprint": FINGERPRINT, "sinceSeq": since},
        )
        if attempt % 9 == 8:
            # sometimes it is gone again before the answer arrives
            await socket.drop()
            socket = await Socket.open(alice, seen)
            resume = await socket.send(
                "session-resume",
                {"sessionId": session_id, "fingerprint": FINGERPRINT, "sinceSeq": since},
            )
        resumed = await socket.reply(resume)
        assert resumed["type"] == "session-resumed"
        # the missed events come in the reply; no event may have come before it
        assert last_seq(seen) == since, "an event arrived before session-resumed"
        missed = resumed["data"]["missed"]
        assert [event["seq"] for event in missed] == list(range(since + 1, since + 1 + len(missed)))
        seen.extend(missed)
        print("RESUME", attempt, since, len(missed), round(time.monotonic() - started, 2))
        statuses = {p["id"]: p["status"] for p in resumed["data"]["processes"]}
        statuses_at_resume.append(statuses[chat_id])

    # then, once the last story is told and the process is IDLE
    await wait_until_idle_and_complete(socket, session_id, chat_id, chats)
    await socket.drop()
    stored = await stored_last_seq(session_id)
    assert_exactly_once_in_order(seen, stored)
    # and every reply the client put together from deltas is the stored assistant message
    streamed, messages = replies_streamed(seen, chat_id)
    assert len(streamed) == chats
    assert streamed == messages == await stored_assistant_messages(chat_id)
    assert streamed == [slow_story] * chats
    # the stream really was running through the reconnects
    assert statuses_at_resume.count("RUNNING") == RECONNECTS, statuses_at_resume
    print(stats)
    print("CHATS", chats, "EVENTS", stored, "T", time.monotonic() - started)
    assert time.monotonic() - started < 90


async def test_two_sockets_bound_to_one_session_each_see_every_new_event_once(alice, slow_story):
    first_seen: list[dict[str, Any]] = []
    first = await Socket.open(alice, first_seen)
    created = await first.request(
        "session-create",
        {
            "clientType": "cli",
            "projectId": alice.project_id,
            "fingerprint": FINGERPRINT,
            "onDisconnect": "KEEP_OPEN",
        },
    )
    session_id = created["data"]["session"]["id"]
    chat_id = created["data"]["chatProcessId"]
    await first.request("chat", {"text": "story one"})
    await first.events(10)
    # a second socket joins mid-stream with the same fingerprint, from the start of the session
    second_seen: list[dict[str, Any]] = []
    second = await Socket.open(alice, second_seen)
    resumed = await second.request(
        "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT, "sinceSeq": 0}
    )
    second_seen.extend(resumed["data"]["missed"])
    joined_at = last_seq(second_seen)
    assert joined_at >= 10
    # both chat while both are bound
    await second.request("chat", {"text": "story two"})
    await first.request("chat", {"text": "story three"})
    for socket in (first, second):
        await wait_until_idle_and_complete(socket, session_id, chat_id, 3)
    stored = await stored_last_seq(session_id)
    assert stored > joined_at + STORY_WORDS
    assert_exactly_once_in_order(first_seen, stored)
    assert_exactly_once_in_order(second_seen, stored)
    assert first_seen == second_seen
    streamed, _ = replies_streamed(first_seen, chat_id)
    assert streamed == [slow_story] * 3 == await stored_assistant_messages(chat_id)
    await first.drop()
    await second.drop()
