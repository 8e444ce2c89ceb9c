"""Every frame the Brain sends is one of the models of protocol/outbound.py, and
that model gives back the very frame: nothing added, nothing lost, nothing undeclared."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from channels.db import database_sync_to_async
from pydantic import ValidationError

from inbox.models import InboxKind, InboxStatus
from inbox.services import post_item
from processes.lane.driver import _failure_notice
from processes.models import Compaction, ThinkProcess
from processes.transitions import status_event
from protocol import outbound as out
from sessions_app.event_sink import EventSink
from sessions_app.events import emit_events
from sessions_app.models import Session, SessionEvent
from spaces.actions.agent import start_space
from tests.support.tenancy import open_session
from tests.support.ws import FINGERPRINT, bearer, connect
from tests.triggers.helpers import REVIEW, create_workflow
from vancetope.llm.scripted import ScriptedProvider

# docs/protocol.md, "Events" of the first stage, the reply types of its request table, and the
# second stage's inbox replies.
PROTOCOL_EVENTS = [
    "process-status",
    "chat-delta",
    "chat-message",
    "task-tree",
    "tool-call",
    "inbox-item",
    "notification",
    "session-status",
    "run",
    "space-state",
    "conversation-folded",
]
PROTOCOL_REPLIES = [
    "workflow-started",
    "session-created",
    "session-resumed",
    "session-closed",
    "tools-registered",
    "chat-accepted",
    "process-created",
    "process-started",
    "process-paused",
    "process-resumed",
    "process-stopped",
    "process-reset",
    "process-steered",
    "process-undone",
    "process-unsent",
    "process-uncompacted",
    "process-list",
    "process",
    "thinkengines",
    "recipes",
    "inbox",
    "inbox-answered",
    "inbox-dismissed",
    "space",
    "memory-results",
]

SHELL_RUN = {
    "name": "run_shell",
    "description": "Run a shell command in the working directory",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    "safety": "MUTATING",
}
SHELL_RUN_CALL = {"name": "run_shell", "arguments": {"command": "ls"}}


def reply_types() -> set[str]:
    members = typing.get_args(typing.get_args(out.ServerFrame)[0])
    types: set[str] = set()
    for member in members:
        if typing.get_origin(member) is typing.Annotated:
            continue  # the events, one frame type
        types.update(typing.get_args(member.model_fields["type"].annotation))
    return types - {"error"}


def round_trip(frame: dict[str, Any]) -> Any:
    """Validate a frame against the outbound union and check its model gives it back."""
    model = out.server_frame.validate_python(frame)
    assert out.server_frame.dump_python(model, mode="json") == frame
    return model


def fold_first_turn(process_id: int) -> None:
    """A compaction of the process's first two messages, as the lane writes one."""
    Compaction.objects.create(
        process_id=process_id,
        first_index=0,
        last_index=1,
        messages=2,
        turns=1,
        summary="The person said hello.",
        method="llm",
    )


class Recording:
    """The communicator, keeping every frame the Brain sent."""

    def __init__(self, communicator: Any) -> None:
        self._communicator = communicator
        self.frames: list[str] = []

    async def receive_from(self, timeout: float = 1) -> str:  # noqa: ASYNC109 (its signature)
        text = await self._communicator.receive_from(timeout)
        self.frames.append(text)
        return str(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._communicator, name)


def test_the_event_models_are_the_events_protocol_md_names():
    assert set(out.EVENT_MODELS) == set(PROTOCOL_EVENTS)


def test_the_reply_models_are_the_replies_protocol_md_names():
    assert reply_types() == set(PROTOCOL_REPLIES)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_every_frame_of_a_session_is_an_outbound_model_that_gives_it_back(alice, monkeypatch):
    # given an LLM that asks for the client's shell once
    script = [{"match": "list the files", "times": 1, "tool_calls": [SHELL_RUN_CALL]}]
    provider = ScriptedProvider(script)
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: provider)
    client = await connect(bearer(alice))
    recording = client.ws = Recording(client.ws)
    # when a client goes through every request docs/protocol.md offers
    created = await client.request(
        "session-create",
        {
            "clientType": "cli",
            "projectId": alice.project_id,
            "fingerprint": FINGERPRINT,
            "recipe": "frankie-coding",
        },
    )
    session_id = created["data"]["session"]["id"]
    await client.request("tools-register", {"tools": [SHELL_RUN]})
    await client.request("chat", {"text": "list the files"})
    call = await client.event("tool-call", tool="run_shell")
    await client.ws.send_to(
        text_data=json.dumps(
            {
                "type": "tool-result",
                "id": "r1",
                "data": {"callId": call["data"]["callId"], "ok": True, "result": "README.md"},
            }
        )
    )
    await client.event("chat-message", role="assistant")
    worker = await client.request("process-create", {"thinkEngine": "ford", "start": False})
    assert worker["type"] == "process-created", worker
    worker_id = worker["data"]["process"]["id"]
    for verb in ("start", "pause", "resume"):
        await client.request(f"process-{verb}", {"processId": worker_id})
    await client.request("process-steer", {"processId": worker_id, "message": "hello"})
    await client.event("chat-message", role="assistant", processId=worker_id)
    for verb in ("stop", "reset"):
        await client.request(f"process-{verb}", {"processId": worker_id})
    await client.request("process-list")
    await client.request("process-get", {"processId": worker_id})
    await client.request("thinkengines-list")
    await client.request("recipes-list")
    approval = await post_for(worker_id, "APPROVAL")
    notice = await post_for(worker_id, "OUTPUT_TEXT")
    await client.request("inbox-list")
    await client.request("inbox-answer", {"itemId": approval, "answer": {"decision": "approve"}})
    await client.request("inbox-dismiss", {"itemId": notice})
    # the chat's turn taken back, and a message that waits withdrawn
    chat_id = created["data"]["chatProcessId"]
    undone = await client.request("process-undo", {"processId": chat_id})
    assert undone["type"] == "process-undone", undone
    await client.request("process-pause", {"processId": chat_id})
    later = await client.request("chat", {"text": "later"})
    unsent = await client.request(
        "process-unsend", {"processId": chat_id, "seq": later["data"]["seq"]}
    )
    assert unsent["type"] == "process-unsent", unsent
    await client.request("process-resume", {"processId": chat_id})
    # a summary of the chat's first turn (as a compaction writes one) undone
    await database_sync_to_async(fold_first_turn)(int(chat_id.removeprefix("tp_")))
    uncompacted = await client.request("process-uncompact", {"processId": chat_id})
    assert uncompacted["type"] == "process-uncompacted", uncompacted
    asking = {**REVIEW, "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "which?"}]}
    workflow_id = await database_sync_to_async(create_workflow)(alice, asking)
    await client.request("workflow-start", {"workflowId": workflow_id, "input": {"topic": "x"}})
    await client.request("memory-search", {"query": "anything remembered"})
    await client.event("run", after=0)
    await client.request("chat", {})
    # the session's chat becomes the root of a thinking space, which the client reads
    await database_sync_to_async(start_space)(int(chat_id.removeprefix("tp_")))
    await client.request("space-get", {})
    await client.event("space-state")
    second = await connect(bearer(alice))
    second.ws = Recording(second.ws)
    await second.request(
        "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT, "sinceSeq": 0}
    )
    await client.request("session-close")
    await client.event("session-status", status="CLOSED")
    await second.ws.disconnect()
    await client.ws.disconnect()
    # then every frame is a declared one, and its model gives it back exactly
    models = [round_trip(json.loads(text)) for text in recording.frames + second.ws.frames]
    sent_types = {model.type for model in models}
    assert sent_types - {"event"} == reply_types() | {"error"}
    events = {model.event for model in models if model.type == "event"}
    assert events >= {"process-status", "chat-delta", "chat-message", "tool-call", "inbox-item"}
    assert "session-status" in events
    closed = [
        m
        for m in models
        if m.type == "event" and m.event == "process-status" and m.data.closeReason
    ]
    assert closed[0].data.closeReason == "STOPPED"


@database_sync_to_async
def post_for(process_id: str, kind: str) -> str:
    process = ThinkProcess.objects.select_related("session").get(
        pk=int(process_id.removeprefix("tp_"))
    )
    return post_item(process, kind, f"a {kind.lower()}", "").public_id


def stored_frames(session: Session, after: int = 0) -> list[dict[str, Any]]:
    events = SessionEvent.objects.filter(session=session, seq__gt=after).order_by("seq")
    return [json.loads(event.frame_text()) for event in events]


def test_task_tree_and_notification_events_are_built_from_their_models(alice):
    # given a session and the event sink of its chat process
    session = open_session(alice)
    sink = EventSink(session.pk, f"tp_{session.chat_process_id}", delta_interval=0)
    before = Session.objects.get(pk=session.pk).last_seq
    # when the engine reports a task tree and a notification
    sink.task_tree({"rootId": "n1", "nodes": [{"id": "n1", "parentId": None}]})
    sink.notify("disk almost full", level="warning")
    sink.flush()
    # then both are stored as their models give them, with no optional field set
    frames = stored_frames(session, after=before)
    assert [frame["event"] for frame in frames] == ["notification", "task-tree"]
    for frame in frames:
        round_trip(frame)
    assert frames[0]["data"] == {"text": "disk almost full", "level": "warning"}
    assert frames[1]["data"]["tree"]["nodes"][0]["parentId"] is None


def test_an_inbox_item_event_carries_the_whole_item_as_its_model_gives_it(alice):
    # given a session and its chat process, which posts an item
    session = open_session(alice)
    origin = ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)
    before = Session.objects.get(pk=session.pk).last_seq
    # when
    item = post_item(origin, "QUESTION", "Which year?", "For the *report*.", ["2023", "2024"])
    # then the stored frame is the model's, every field of the item there, nulls included
    [frame] = stored_frames(session, after=before)
    round_trip(frame)
    assert frame["event"] == "inbox-item"
    assert frame["data"]["item"] == {
        "id": item.public_id,
        "kind": "QUESTION",
        "title": "Which year?",
        "body": "For the *report*.",
        "options": ["2023", "2024"],
        "status": "OPEN",
        "answer": None,
        "answeredBy": None,
        "answeredAt": None,
        "expiresAt": None,
        "defaultAction": None,
        "originProcessId": origin.public_id,
        "originRunId": None,
        "askedBy": None,
        "originDelivered": None,
        "originNote": None,
        "projectId": alice.project_id,
        "createdAt": frame["data"]["item"]["createdAt"],
    }


def test_the_inbox_kinds_and_statuses_of_the_protocol_are_the_models():
    item_fields = out.InboxItemObject.model_fields
    assert set(typing.get_args(item_fields["kind"].annotation)) == set(InboxKind.values)
    assert set(typing.get_args(item_fields["status"].annotation)) == set(InboxStatus.values)


def test_a_process_status_carries_close_reason_and_drift_only_when_set(alice):
    session = open_session(alice)
    process = ThinkProcess.objects.get(pk=session.chat_process_id)
    # when the process is IDLE, then neither is there
    assert status_event(process, "IDLE") == (
        "process-status",
        {"processId": process.public_id, "status": "IDLE"},
    )
    # when it drifted and closed, then both are
    process.context_drift = True
    assert status_event(process, "CLOSED", "STOPPED")[1] == {
        "processId": process.public_id,
        "status": "CLOSED",
        "closeReason": "STOPPED",
        "contextDrift": True,
    }


def test_the_failure_notice_is_an_error_notification(alice):
    process = ThinkProcess.objects.get(pk=open_session(alice).chat_process_id)
    process.last_error = "RuntimeError: boom"
    assert _failure_notice(process) == (
        "notification",
        {"text": f"{process.public_id} failed: RuntimeError: boom", "level": "error"},
    )


def test_an_event_without_a_model_is_refused_and_nothing_is_stored(alice):
    session = open_session(alice)
    before = Session.objects.get(pk=session.pk).last_seq
    # when
    with pytest.raises(out.UnknownEvent, match="made-up-event"):
        emit_events(
            session.pk,
            [
                out.event(out.ChatDeltaEvent(processId="tp_1", text="a")),
                ("made-up-event", {"space": {}}),
            ],
        )
    # then
    assert Session.objects.get(pk=session.pk).last_seq == before
    assert stored_frames(session, after=before) == []


def test_events_go_out_as_their_stored_rows_replay_them(alice):
    session = open_session(alice)
    before = Session.objects.get(pk=session.pk).last_seq
    items = [
        out.event(out.ChatDeltaEvent(processId="tp_1", text='é \u2028 "q"')),
        out.event(out.NotificationEvent(text="done", level="success")),
    ]
    # when two events are stored in one batch
    frames = emit_events(session.pk, items)
    # then they took the next seqs, and each frame pushed is the frame its row replays (the
    # same JSON; PostgreSQL's jsonb keeps an object's keys in an order of its own)
    assert [seq for seq, _ in frames] == [before + 1, before + 2]
    stored = SessionEvent.objects.filter(session=session, seq__gt=before).order_by("seq")
    replayed = [(event.seq, json.loads(event.frame_text())) for event in stored]
    assert replayed == [(seq, json.loads(text)) for seq, text in frames]
    assert [json.loads(text)["event"] for _, text in frames] == ["chat-delta", "notification"]


def test_a_kernel_event_is_checked_against_its_model(alice):
    session = open_session(alice)
    sink = EventSink(session.pk, f"tp_{session.chat_process_id}", delta_interval=0)
    call = {"callId": "call_1", "processId": "tp_1", "tool": "run_shell", "arguments": {}}
    # an undeclared field, a missing one, an unknown name: refused
    with pytest.raises(ValidationError, match="extra"):
        sink.emit("tool-call", {**call, "extra": 1})
    with pytest.raises(ValidationError, match="arguments"):
        sink.emit("tool-call", {key: value for key, value in call.items() if key != "arguments"})
    with pytest.raises(out.UnknownEvent):
        sink.emit("tool-called", call)
    # and a good one goes out as it came
    before = Session.objects.get(pk=session.pk).last_seq
    sink.emit("tool-call", call)
    assert [frame["data"] for frame in stored_frames(session, after=before)] == [call]


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(
            {"type": "tools-registered", "replyTo": "c1", "data": {"count": 1, "extra": 2}},
            id="undeclared field in a reply's data",
        ),
        pytest.param(
            {"type": "tools-registered", "replyTo": "c1", "data": {"count": 1}, "seq": 3},
            id="undeclared field in a reply",
        ),
        pytest.param(
            {"type": "session-exploded", "replyTo": "c1", "data": {}}, id="unknown reply type"
        ),
        pytest.param(
            {"type": "event", "seq": 1, "event": "made-up-event", "data": {"space": {}}},
            id="unknown event name",
        ),
        pytest.param(
            {"type": "event", "seq": 1, "event": "inbox-item", "data": {"item": {"id": "inb_1"}}},
            id="an inbox item without its fields",
        ),
        pytest.param(
            {"type": "event", "seq": 1, "event": "session-status", "data": {"status": "GONE"}},
            id="undeclared value",
        ),
        pytest.param(
            {"type": "error", "replyTo": None, "data": {"code": 400, "error": "bad-request"}},
            id="missing field",
        ),
    ],
)
def test_a_frame_that_is_not_declared_is_refused(frame):
    with pytest.raises(ValidationError):
        out.server_frame.validate_python(frame)


def test_optional_event_fields_stay_off_the_wire():
    assert out.event(out.NotificationEvent(text="hi", level="info")) == (
        "notification",
        {"text": "hi", "level": "info"},
    )
    assert out.event(out.NotificationEvent(text="hi", level="info", runId="run_1"))[1] == {
        "text": "hi",
        "level": "info",
        "runId": "run_1",
    }


def test_a_reply_carries_every_field_null_included():
    frame = out.ErrorFrame(data=out.ErrorData(code=404, error="not-found", message="gone"))
    assert json.loads(frame.model_dump_json()) == {
        "type": "error",
        "replyTo": None,
        "data": {"code": 404, "error": "not-found", "message": "gone", "field": None},
    }
