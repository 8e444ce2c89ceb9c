"""The chat client's handling of frames, without a Brain: events in seq order exactly once,
tool calls answered with tool-result frames, replies matched to their requests."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.chat_client import event
from vance.chat import ChatClient
from vance.inbox import answer_from_text, answered_text
from vance.slash import run_slash_command


async def settle(chat: ChatClient) -> None:
    while chat.background:
        await asyncio.gather(*chat.background)


async def test_streamed_deltas_are_shown_once_even_when_replayed(client):
    chat, output, _ = client()
    frames = [
        event(1, "process-status", processId="tp_1", status="RUNNING"),
        event(2, "chat-delta", processId="tp_1", text="echo: "),
        event(3, "chat-delta", processId="tp_1", text="hello"),
        event(4, "chat-message", processId="tp_1", role="assistant", text="echo: hello"),
    ]
    for frame in frames:
        chat._dispatch(frame)
    # a resume replays what the Brain thinks is missing; nothing shows twice
    for frame in frames[1:]:
        chat._dispatch(frame)
    assert output.getvalue().count("echo: hello") == 1
    assert "brain › echo: hello" in output.getvalue()
    assert chat.last_seq == 4


async def test_a_final_message_that_arrives_after_a_reconnect_is_not_shown_again(client):
    chat, output, _ = client()
    # given: the reply streamed in full, then the connection dropped before its final message
    chat._dispatch(event(1, "chat-delta", processId="tp_1", text="echo: "))
    chat._dispatch(event(2, "chat-delta", processId="tp_1", text="hello"))
    chat.printer.line("Connection to the Brain lost; reconnecting")
    # when the resume brings the final message
    chat._dispatch(event(3, "chat-message", processId="tp_1", role="assistant", text="echo: hello"))
    # then it is not printed a second time
    assert output.getvalue().count("echo: hello") == 1
    # and a message that did not stream in full is still shown whole
    chat._dispatch(event(4, "chat-delta", processId="tp_1", text="echo: "))
    chat.printer.line("Connection to the Brain lost; reconnecting")
    chat._dispatch(event(5, "chat-message", processId="tp_1", role="assistant", text="echo: bye"))
    assert "brain › echo: bye" in output.getvalue()


async def test_a_tool_call_event_is_answered_with_a_tool_result_frame(client):
    chat, output, socket = client()
    # given: the tool-call event of docs/protocol.md
    chat._dispatch(
        event(5, "tool-call", callId="call_1", processId="tp_1", tool="list_files", arguments={})
    )
    # when
    await settle(chat)
    # then
    (frame,) = socket.sent
    assert frame["type"] == "tool-result"
    assert frame["data"]["callId"] == "call_1"
    assert frame["data"]["ok"] is True
    assert [e["path"] for e in frame["data"]["result"]["entries"]] == ["README.md"]
    assert "list_files → ok" in output.getvalue()


async def test_a_mutating_tool_call_asks_and_a_no_is_sent_back(client):
    chat, output, socket = client()
    arguments = {"command": "touch made-by-brain"}
    chat._dispatch(
        event(
            6, "tool-call", callId="call_2", processId="tp_1", tool="run_shell", arguments=arguments
        )
    )
    await asyncio.sleep(0.05)
    assert "Allow run_shell? [y/N]" in output.getvalue()
    assert "$ touch made-by-brain" in output.getvalue()
    chat.router.feed("n")
    await settle(chat)
    assert socket.sent[0]["data"] == {
        "callId": "call_2",
        "ok": False,
        "error": "the user declined to run run_shell",
    }
    assert not (Path(chat.fingerprint.working_dir) / "made-by-brain").exists()


async def test_a_typed_line_answers_the_question_not_the_chat(client):
    chat, _, socket = client()
    arguments = {"path": "new.txt", "content": "x"}
    chat._dispatch(
        event(
            7,
            "tool-call",
            callId="call_3",
            processId="tp_1",
            tool="write_file",
            arguments=arguments,
        )
    )
    await asyncio.sleep(0.05)
    chat.router.feed("y")
    await settle(chat)
    assert socket.sent[0]["data"]["ok"] is True
    assert chat.router.lines.empty()


async def test_the_same_tool_call_is_not_answered_twice(client):
    chat, _, socket = client(assume_yes=True)
    call = {"callId": "call_4", "processId": "tp_1", "tool": "git_log", "arguments": {}}
    chat._dispatch(event(8, "tool-call", **call))
    chat._dispatch(event(9, "tool-call", **call))
    await settle(chat)
    assert len(socket.sent) == 1
    assert socket.sent[0]["data"]["ok"] is False  # not a git repository


async def test_inbox_items_notifications_and_task_trees_show_inline(client):
    chat, output, _ = client()
    item = {"id": "inb_3", "kind": "QUESTION", "title": "Use 2024 data?", "status": "OPEN"}
    chat._dispatch(event(1, "inbox-item", item={**item, "options": ["yes", "no"]}))
    chat._dispatch(event(2, "notification", text="tp_4 finished", level="info"))
    tree = {
        "title": "review",
        "status": "RUNNING",
        "children": [{"title": "read", "status": "IDLE"}],
    }
    chat._dispatch(event(3, "task-tree", processId="tp_4", tree=tree))
    chat._dispatch(event(4, "process-status", processId="tp_4", status="PAUSED"))
    text = output.getvalue()
    assert "Use 2024 data?" in text
    assert "options: yes | no" in text
    assert "/answer inb_3" in text
    assert "tp_4 finished" in text
    assert "review" in text
    assert "read" in text
    assert "tp_4 PAUSED" in text


async def test_context_drift_lists_each_process_and_how_to_decide(client):
    chat, output, _ = client()
    chat._resumed(
        {
            "session": {
                "id": "sess_1",
                "chatProcessId": "tp_1",
                "fingerprint": {"workingDir": "/a"},
            },
            "processes": [
                {"id": "tp_1", "status": "SUSPENDED", "contextDrift": True, "thinkEngine": "ford"},
                {"id": "tp_2", "status": "IDLE", "contextDrift": False},
            ],
            "missed": [],
        },
        reconnect=False,
    )
    text = output.getvalue()
    assert "context drift" in text
    for choice in ("/resume tp_1", "/stop tp_1", "/reset tp_1"):
        assert choice in text
    assert "tp_2" not in text.split("context drift", 1)[1]


async def test_replies_are_matched_to_their_requests(client):
    chat, _, socket = client()
    waiting = asyncio.create_task(chat._call("process-list", {}))
    await asyncio.sleep(0)
    request_id = socket.sent[0]["id"]
    chat._dispatch({"type": "process-list", "replyTo": request_id, "data": {"processes": []}})
    assert (await waiting)["data"] == {"processes": []}


async def test_a_resume_shows_only_the_missed_events_it_has_not_shown(client):
    chat, output, _ = client()
    chat._dispatch(event(1, "chat-delta", processId="tp_1", text="echo: one"))
    chat._dispatch(event(2, "chat-message", processId="tp_1", role="assistant", text="echo: one"))
    # given: the connection dropped after seq 2; the Brain answered meanwhile
    missed = [
        event(2, "chat-message", processId="tp_1", role="assistant", text="echo: one"),
        event(3, "chat-delta", processId="tp_1", text="echo: two"),
        event(4, "chat-message", processId="tp_1", role="assistant", text="echo: two"),
    ]
    # when
    chat._resumed(
        {"session": {"id": "sess_1", "chatProcessId": "tp_1"}, "processes": [], "missed": missed},
        reconnect=True,
    )
    # then
    text = output.getvalue()
    assert text.count("echo: one") == 1
    assert text.count("echo: two") == 1
    assert "resumed session sess_1" in text
    assert "reconnected, 3 events since seq 2" in text
    assert chat.memory.recall() is not None
    assert chat.memory.recall().last_seq == 4  # type: ignore[union-attr]


ITEM = {
    "id": "inb_3",
    "kind": "APPROVAL",
    "title": "Deploy?",
    "body": "",
    "options": [],
    "status": "OPEN",
    "originProcessId": "tp_4",
}


@pytest.mark.parametrize(
    ("text", "item", "answer"),
    [
        ("approve", ITEM, {"decision": "approve"}),
        ("Reject  not today", ITEM, {"decision": "reject", "comment": "not today"}),
        ("maybe", ITEM, {"decision": "maybe"}),
        ("approve looks fine", None, {"decision": "approve", "comment": "looks fine"}),
        ("2024", {**ITEM, "kind": "QUESTION", "options": ["2023", "2024"]}, {"choice": "2024"}),
        ("approve", {**ITEM, "kind": "QUESTION", "options": []}, {"text": "approve"}),
        ("the last one", None, {"text": "the last one"}),
    ],
)
def test_a_typed_answer_becomes_the_answer_object_its_item_takes(text, item, answer):
    assert answer_from_text(text, item) == answer


async def test_slash_answer_sends_the_answer_its_item_takes_and_says_where_it_went(client):
    chat, output, socket = client()
    chat._dispatch(event(1, "inbox-item", item=ITEM))
    # when
    running = asyncio.create_task(run_slash_command(chat, "/answer inb_3 approve ship it"))
    await asyncio.sleep(0.01)
    [sent] = socket.sent
    answered = {**ITEM, "status": "ANSWERED", "originDelivered": True}
    chat._dispatch(
        {
            "type": "inbox-answered",
            "replyTo": sent["id"],
            "data": {"item": answered, "delivered": True},
        }
    )
    await running
    # then
    assert sent["type"] == "inbox-answer"
    assert sent["data"] == {
        "itemId": "inb_3",
        "answer": {"decision": "approve", "comment": "ship it"},
    }
    assert "answered inb_3; tp_4 has it" in output.getvalue()
    # and the item's change shows as one line
    chat._dispatch(event(2, "inbox-item", item=answered))
    assert "inbox inb_3 ANSWERED: Deploy?" in output.getvalue()


async def test_an_answer_that_reached_no_process_says_why(client):
    chat, output, _ = client()
    item = {**ITEM, "status": "ANSWERED", "originDelivered": False, "originNote": "tp_4 is CLOSED"}
    chat.printer.line(answered_text({"item": item, "delivered": False}))
    assert "answered inb_3, but not delivered: tp_4 is CLOSED" in output.getvalue()


async def test_runs_show_only_when_they_fail_or_ask(client):
    chat, output, _ = client()

    def run(seq: int, **fields: object) -> dict[str, object]:
        data = {"tasksExecuted": 3, "tokensUsed": 120, "error": None, **fields}
        return event(seq, "run", run=data)

    # a chat turn's run, and a cron job's routine start and end: nothing to read
    chat._dispatch(run(1, id="run_1", trigger={"type": "user"}, status="completed"))
    chat._dispatch(run(2, id="run_2", trigger={"type": "cron"}, status="running"))
    chat._dispatch(run(3, id="run_2", trigger={"type": "cron"}, status="completed_partial"))
    assert "run_1" not in output.getvalue()
    assert "run_2" not in output.getvalue()
    # a workflow run that waits for an answer, and a run of hers that failed: one line each
    asks = [{"reason": "Which colour?"}]
    chat._dispatch(run(4, id="run_4", trigger={"type": "workflow"}, status="blocked",
                       blockedReasons=asks))  # fmt: skip
    chat._dispatch(run(5, id="run_5", trigger={"type": "user"}, status="failed", error="boom"))
    lines = output.getvalue().splitlines()
    assert any(
        "run_4 workflow blocked  3 tasks, 120 tokens  Which colour?  (/inbox)" in line
        for line in lines
    )
    assert any("run_5 user failed" in line and "boom" in line for line in lines)
