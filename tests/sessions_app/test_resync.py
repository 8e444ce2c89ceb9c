"""Resync over the WebSocket (docs/protocol.md: session-resume with sinceSeq → missed[]).

A client that disconnects and reconnects 50 times while a process streams receives every event
exactly once, in seq order, after resync. The chat process streams slowly because the scripted
LLM's rule has a `delay_per_delta`; the session's onDisconnect is KEEP_OPEN, so dropping the
socket does not suspend (and so interrupt) the running turn.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from processes.models import ConversationMessage
from sessions_app.models import Session
from tests.support.tenancy import Tenancy
from tests.support.ws import FINGERPRINT, bearer
from vancetope.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# Every receive is bounded. The communicator cancels the app when a receive times out, so this
# bounds a failure; the test never waits for it to pass.
RECEIVE_TIMEOUT = 15.0
RECONNECTS = 50
# While reconnects remain, this many stories wait behind the one streaming, so the stream never
# runs dry; when they stop, the stream ends soon after.
QUEUED_AHEAD = 1
# How many frames the client reads before its socket drops, and how long it stays away
# (seconds); picked by a seeded random, so missed[] ranges from nothing to dozens of events.
FRAMES_BEFORE_DROP = [0, 1, 2, 3, 5, 8, 13]
OFFLINE_PAUSES = [0.0, 0.0, 0.0, 0.01, 0.05, 0.2]
STORY_WORDS = 320
TALE_WORDS = 60
DELAY_PER_DELTA = 0.006
EventFrames = list[dict[str, Any]]


def words_reply(prefix: str, words: int) -> str:
    """Distinct words with mixed whitespace, so a lost, doubled or swapped delta shows."""
    parts = []
    for index in range(words):
        separator = "\n" if index % 25 == 24 else "  " if index % 7 == 6 else " "
        parts.append(f"{prefix}{index:03d}{separator}")
    return "".join(parts).rstrip()


@dataclass(frozen=True)
class SlowReplies:
    story: str
    tale: str


@pytest.fixture
def slow_replies(settings: Any, tmp_path: Path) -> SlowReplies:
    """Point the scripted LLM at a script whose replies stream slowly, word by word."""
    replies = SlowReplies(story=words_reply("s", STORY_WORDS), tale=words_reply("t", TALE_WORDS))
    script = tmp_path / "slow.yaml"
    rules = [
        {"match": "^story", "reply": replies.story, "delay_per_delta": DELAY_PER_DELTA},
        {"match": "^tale", "reply": replies.tale, "delay_per_delta": DELAY_PER_DELTA},
    ]
    script.write_text(yaml.safe_dump(rules, width=1_000_000), encoding="utf-8")
    settings.VANCETOPE_LLM = "scripted"
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    # Every word its own event: the most events for the reconnects to fall between.
    settings.VANCETOPE_DELTA_INTERVAL_SECONDS = 0
    return replies


class Socket:
    """One WebSocket connection. Every event it receives is appended to `seen`, which all the
    sockets of one client share: `seen` is what that client saw over its lifetime."""

    def __init__(self, ws: WebsocketCommunicator, seen: EventFrames) -> None:
        self.ws = ws
        self.seen = seen
        self.counter = 0
        self.replies: dict[str, dict[str, Any]] = {}
        self.waiting_for = ""
        self.session_id = ""

    @classmethod
    async def open(cls, tenancy: Tenancy, seen: EventFrames) -> Socket:
        ws = WebsocketCommunicator(application, "/ws/brain/", headers=bearer(tenancy))
        connected, _ = await ws.connect(timeout=RECEIVE_TIMEOUT)
        assert connected
        return cls(ws, seen)

    async def send(self, kind: str, data: dict[str, Any] | None = None) -> str:
        self.counter += 1
        request_id = f"{kind}#{self.counter}"
        frame: dict[str, Any] = {"type": kind, "id": request_id}
        if data is not None:
            frame["data"] = data
        await self.ws.send_to(text_data=json.dumps(frame))
        return request_id

    async def frame(self) -> dict[str, Any]:
        try:
            text = await self.ws.receive_from(timeout=RECEIVE_TIMEOUT)
        except TimeoutError:
            stored = await stored_last_seq(self.session_id) if self.session_id else None
            pytest.fail(
                f"no frame within {RECEIVE_TIMEOUT}s while waiting for "
                f"{self.waiting_for or 'events'}; the client saw up to seq {last_seq(self.seen)}, "
                f"the session's last stored seq is {stored}"
            )
        frame = json.loads(text)
        if frame.get("type") == "event":
            self.seen.append(frame)
        else:
            self.replies[frame.get("replyTo")] = frame
        return frame

    async def reply(self, request_id: str) -> dict[str, Any]:
        self.waiting_for = f"the reply to {request_id}"
        while request_id not in self.replies:
            await self.frame()
        self.waiting_for = ""
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

    async def create_session(self, tenancy: Tenancy) -> tuple[str, str]:
        created = await self.request(
            "session-create",
            {
                "clientType": "cli",
                "projectId": tenancy.project_id,
                "fingerprint": FINGERPRINT,
                "onDisconnect": "KEEP_OPEN",
            },
        )
        assert created["data"]["session"]["onDisconnect"] == "KEEP_OPEN"
        self.session_id = created["data"]["session"]["id"]
        return self.session_id, created["data"]["chatProcessId"]

    async def send_resume(self, session_id: str, since_seq: int) -> str:
        """Ask to be bound to the session again, with what was missed since `since_seq`."""
        self.session_id = session_id
        return await self.send(
            "session-resume",
            {"sessionId": session_id, "fingerprint": FINGERPRINT, "sinceSeq": since_seq},
        )

    async def drop(self) -> None:
        """Go away abruptly: whatever the server sent that was not read yet is lost."""
        await self.ws.disconnect(code=1006, timeout=RECEIVE_TIMEOUT)


def last_seq(seen: EventFrames) -> int:
    return seen[-1]["seq"] if seen else 0


def is_reply(frame: dict[str, Any], process_id: str) -> bool:
    data = frame["data"]
    return (
        frame["event"] == "chat-message"
        and data["processId"] == process_id
        and data["role"] == "assistant"
    )


def replies_seen(seen: EventFrames, process_id: str) -> int:
    return sum(1 for frame in seen if is_reply(frame, process_id))


def replies_streamed(seen: EventFrames, process_id: str) -> tuple[list[str], list[str]]:
    """Per assistant reply of the process: its chat-delta texts joined, and its chat-message."""
    streamed, messages, deltas = [], [], []
    for frame in seen:
        if frame["event"] == "chat-delta" and frame["data"]["processId"] == process_id:
            deltas.append(frame["data"]["text"])
        elif is_reply(frame, process_id):
            streamed.append("".join(deltas))
            messages.append(frame["data"]["text"])
            deltas = []
    assert deltas == [], "chat-deltas after the last assistant message"
    return streamed, messages


def idle_after_last_reply(seen: EventFrames, process_id: str) -> bool:
    for frame in reversed(seen):
        if frame["data"].get("processId") != process_id:
            continue
        if frame["event"] != "process-status":
            return False
        if frame["data"]["status"] == "IDLE":
            return True
    return False


@database_sync_to_async
def stored_last_seq(session_id: str) -> int:
    return Session.objects.get(pk=int(session_id.removeprefix("sess_"))).last_seq


@database_sync_to_async
def stored_replies(process_id: str) -> list[str]:
    rows = ConversationMessage.objects.filter(
        process_id=int(process_id.removeprefix("tp_")), role="assistant"
    ).order_by("index")
    return [row.content for row in rows]


async def read_until_done(socket: Socket, session_id: str, chat_id: str, chats: int) -> None:
    """Read until every chat is answered, the chat process is IDLE again and the client has
    seen the session's last stored event."""
    while True:
        seen = socket.seen
        if replies_seen(seen, chat_id) == chats and idle_after_last_reply(seen, chat_id):
            stored = await stored_last_seq(session_id)
            assert last_seq(seen) <= stored
            if last_seq(seen) == stored:
                return
        await socket.frame()


def assert_exactly_once_in_order(seen: EventFrames, last: int) -> None:
    seqs = [frame["seq"] for frame in seen]
    duplicated = sorted({seq for seq in seqs if seqs.count(seq) > 1})
    missing = sorted(set(range(1, last + 1)) - set(seqs))
    assert not duplicated, f"events seen more than once: {duplicated}"
    assert not missing, f"events never seen: {missing}"
    assert seqs == list(range(1, last + 1)), "events out of order"


async def test_fifty_reconnects_while_streaming_see_every_event_once_in_order(
    alice: Tenancy, slow_replies: SlowReplies
) -> None:
    rng = random.Random(50)
    seen: EventFrames = []
    socket = await Socket.open(alice, seen)
    session_id, chat_id = await socket.create_session(alice)
    chats = 0

    async def keep_streaming() -> None:
        nonlocal chats
        while chats - replies_seen(seen, chat_id) < 1 + QUEUED_AHEAD:
            chats += 1
            await socket.request("chat", {"text": f"story {chats}"})

    await keep_streaming()
    while not any(frame["event"] == "chat-delta" for frame in seen):
        await socket.frame()
    status_at_resume = []
    for attempt in range(RECONNECTS):
        # given a client that read a few frames (sometimes none) before its socket dropped
        await keep_streaming()
        await socket.events(rng.choice(FRAMES_BEFORE_DROP))
        await socket.drop()
        await asyncio.sleep(rng.choice(OFFLINE_PAUSES))
        # when it comes back and asks for what it missed since the last seq it saw
        since = last_seq(seen)
        socket = await Socket.open(alice, seen)
        request_id = await socket.send_resume(session_id, since)
        if attempt % 9 == 8:
            # sometimes the socket drops again before the answer arrives
            await socket.drop()
            socket = await Socket.open(alice, seen)
            request_id = await socket.send_resume(session_id, since)
        resumed = await socket.reply(request_id)
        # then the missed events come in the reply, right after what it saw, and nothing before
        assert resumed["type"] == "session-resumed"
        assert last_seq(seen) == since, "an event arrived before session-resumed"
        missed = resumed["data"]["missed"]
        assert [frame["seq"] for frame in missed] == list(range(since + 1, since + 1 + len(missed)))
        seen.extend(missed)
        status_at_resume.append(
            {process["id"]: process["status"] for process in resumed["data"]["processes"]}[chat_id]
        )

    # then, once the last story is told and the chat process is IDLE
    await read_until_done(socket, session_id, chat_id, chats)
    await socket.drop()
    assert status_at_resume == ["RUNNING"] * RECONNECTS, "the stream ran dry while reconnecting"
    assert_exactly_once_in_order(seen, await stored_last_seq(session_id))
    # and every reply the client put together from deltas is the stored assistant message
    streamed, messages = replies_streamed(seen, chat_id)
    assert streamed == messages == await stored_replies(chat_id)
    assert streamed == [slow_replies.story] * chats


async def test_two_sockets_bound_to_one_session_each_see_every_new_event_once(
    alice: Tenancy, slow_replies: SlowReplies
) -> None:
    # given a client streaming a tale
    first_seen: EventFrames = []
    first = await Socket.open(alice, first_seen)
    session_id, chat_id = await first.create_session(alice)
    await first.request("chat", {"text": "tale one"})
    while sum(frame["event"] == "chat-delta" for frame in first_seen) < 5:
        await first.frame()
    # when a second socket binds to the same session mid-stream (same fingerprint), from seq 0
    second_seen: EventFrames = []
    second = await Socket.open(alice, second_seen)
    resumed = await second.reply(await second.send_resume(session_id, 0))
    assert second_seen == [], "an event arrived before session-resumed"
    second_seen.extend(resumed["data"]["missed"])
    joined_at = last_seq(second_seen)
    # and both chat while both are bound
    await second.request("chat", {"text": "tale two"})
    await first.request("chat", {"text": "tale three"})
    for socket in (first, second):
        await read_until_done(socket, session_id, chat_id, chats=3)
    # then each socket saw every event exactly once, in order, and both saw the same
    last = await stored_last_seq(session_id)
    assert last > joined_at + 2 * TALE_WORDS
    assert_exactly_once_in_order(first_seen, last)
    assert_exactly_once_in_order(second_seen, last)
    assert first_seen == second_seen
    streamed, messages = replies_streamed(first_seen, chat_id)
    assert streamed == messages == await stored_replies(chat_id) == [slow_replies.tale] * 3
    await first.drop()
    await second.drop()
