"""A turn retried after its worker died replays its journal: the LLM is not asked again for an
answer it gave, and a tool with an effect outside the Brain (an MCP server over stdio appending
a line to a file) runs exactly once, or its person is asked.

The worker's death is a failpoint (vancetope/failpoints.py) that raises here instead of killing
the test's own OS process: the lane is left mid-turn, its process RUNNING and its message
pending, as a SIGKILL leaves it; the sweeper then brings the lane back, as after a restart
(tests/processes/test_journal_crash.py kills real Brains and Celery workers the same way).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from inbox.models import InboxItem, InboxKind, InboxStatus
from inbox.services import answer_item
from processes.actions.create import create_process
from processes.actions.steer import send_chat
from processes.capabilities import conversation_cache
from processes.lane import dispatch
from processes.lane.driver import drive_lane
from processes.lane.journal import JOURNAL
from processes.models import PendingMessage, ThinkProcess
from processes.recovery import recover_lanes
from processes.states import CloseReason, Status
from sessions_app.models import SessionEvent
from tests.support.tenancy import open_session
from tests.support.tools import ToolReadingProvider, project_recipe
from vancetope import failpoints
from vancetope.tools.models import CallStatus, Decision, McpServer, ToolCall
from vancetope.tools.replay import TREATED_AS_DONE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("mcp_connections")]

SERVER = Path(__file__).resolve().parents[1] / "support" / "bump_mcp_server.py"


class Crash(BaseException):  # noqa: N818 (not an error: the worker's death)
    """The worker dies here (a BaseException: nothing on the turn's path handles it)."""


@pytest.fixture
def crash_at(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """`crash_at("tool-ran")` or `crash_at("llm-streaming@2")`: the worker dies there."""

    def arm(point: str) -> None:
        name, _, nth = point.partition("@")
        seen = {"count": 0}

        def reach(reached: str) -> None:
            if reached == name:
                seen["count"] += 1
                if seen["count"] == int(nth or 1):
                    raise Crash(point)

        monkeypatch.setattr(failpoints, "reach", reach)

    return arm


@pytest.fixture
def woken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lanes are driven here: a wake is recorded, not run by a worker thread."""
    recorded: list[int] = []
    monkeypatch.setattr(dispatch, "dispatch_drive", recorded.append)
    return recorded


@pytest.fixture
def bump_file(tmp_path: Path, alice: Any) -> Path:
    """The project's MCP server whose tools append to this file."""
    path = tmp_path / "bumps.jsonl"
    path.touch()
    McpServer.objects.create(
        project=alice.project,
        name="bump",
        command=sys.executable,
        args=[str(SERVER)],
        env={"BUMP_FILE": str(path)},
    )
    return path


def bumps(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def worker_calling(alice: Any, llm: Any, tool: str) -> tuple[ThinkProcess, ToolReadingProvider]:
    """A frankie worker whose LLM calls `tool` once for its goal, then answers with the
    result; created and started, its first turn not yet driven."""
    project_recipe(alice, f"frankie-{tool}", allowed_tools_add=[tool])
    provider = llm(
        [
            # Every time it is asked: an answer asked again would call the tool again.
            {"match": "bump it", "tool_calls": [{"name": tool, "arguments": {"key": "k1"}}]}
        ]
    )
    process = create_process(open_session(alice), goal="bump it", recipe=f"frankie-{tool}")
    return process, provider


def killed_at(process_id: int, crash_at: Callable[[str], None], point: str) -> None:
    """The process's worker dies at `point` of its turn."""
    crash_at(point)
    with pytest.raises(Crash):
        drive_lane(process_id)


def restart(process_id: int) -> None:
    """What a restarted Brain does: its sweeper brings back the lane the dead worker left
    RUNNING, and the worker that takes it has kept no conversation."""
    conversation_cache.clear()
    recover_lanes(min_pending_age=timedelta(0))
    drive_lane(process_id)


@pytest.mark.parametrize(
    ("point", "llm_calls"),
    [
        # after the first answer was journaled, before the tool started
        ("tool-starting", 2),
        # the tool answered and its result was journaled, the next call not yet made
        ("tool-answered", 2),
        # during the next LLM call: that call is made again (it was not journaled)
        ("llm-streaming@2", 3),
        # the turn's work done, before its commit
        ("turn-committing", 2),
    ],
)
def test_a_turn_retried_after_its_worker_died_runs_the_tool_once_and_asks_no_answer_again(
    alice, llm, bump_file, crash_at, woken, point, llm_calls
):
    # given a worker whose turn calls a MUTATING MCP tool, and a worker that dies at `point`
    process, provider = worker_calling(alice, llm, "bump")
    killed_at(process.pk, crash_at, point)
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.RUNNING
    # when the lane comes back after the restart
    restart(process.pk)
    # then the worker finished as it would have without the crash
    done = ThinkProcess.objects.get(pk=process.pk)
    assert (done.status, done.close_reason) == (Status.CLOSED, CloseReason.DONE), done.last_error
    assert "result: bumped k1" in done.engine_state["result"]
    # the tool ran once, and the model was asked only what no journal answered
    assert bumps(bump_file) == [{"tool": "bump", "key": "k1"}]
    assert len(provider.offered) == llm_calls
    assert ToolCall.objects.filter(tool="bump").count() == 1
    # its tokens count once: the two answers the turn used, as without the crash
    assert done.llm_calls == 2
    # and its message, consumed, keeps no journal
    message = PendingMessage.objects.get(process_id=process.pk)
    assert message.consumed
    assert JOURNAL not in message.payload


def test_a_mutating_call_the_crash_left_without_a_result_asks_its_person_and_runs_again_once(
    alice, llm, bump_file, crash_at, woken
):
    # given a worker that died after its tool's effect, before the result was recorded
    process, provider = worker_calling(alice, llm, "bump")
    killed_at(process.pk, crash_at, "tool-ran")
    assert len(bumps(bump_file)) == 1
    # when the lane comes back
    restart(process.pk)
    # then the process waits for its person, who is asked whether to run the call again
    blocked = ThinkProcess.objects.get(pk=process.pk)
    call = ToolCall.objects.get(tool="bump")
    assert blocked.status == Status.BLOCKED
    assert call.status == CallStatus.UNCERTAIN
    assert "may have run before the Brain stopped" in blocked.last_error
    item = InboxItem.objects.get(about=call.public_id)
    assert (item.kind, item.status, item.user_id) == (
        InboxKind.APPROVAL,
        InboxStatus.OPEN,
        alice.user.pk,
    )
    assert call.tool in item.body
    assert len(bumps(bump_file)) == 1
    # a sweep, or another attempt, asks nothing twice
    woken.clear()
    recover_lanes(min_pending_age=timedelta(0))
    drive_lane(process.pk)
    assert InboxItem.objects.filter(about=call.public_id).count() == 1
    # when the person approves
    answered = answer_item(item, {"decision": "approve"}, by=alice.user)
    assert answered.delivered
    assert woken == [process.pk]
    drive_lane(process.pk)
    # then the call ran again, once, on the same row, and the worker finished
    done = ThinkProcess.objects.get(pk=process.pk)
    assert (done.status, done.close_reason) == (Status.CLOSED, CloseReason.DONE), done.last_error
    assert len(bumps(bump_file)) == 2
    call.refresh_from_db()
    assert (call.status, call.decision) == (CallStatus.OK, Decision.RUN_AGAIN)
    assert ToolCall.objects.filter(tool="bump").count() == 1
    # the first answer was replayed: two calls in all, none repeated
    assert len(provider.offered) == 2


def test_a_call_treated_as_done_is_not_run_again_and_the_model_is_told(
    alice, llm, bump_file, crash_at, woken
):
    # given a worker that died while its tool ran, and asked its person
    process, provider = worker_calling(alice, llm, "bump")
    killed_at(process.pk, crash_at, "tool-ran")
    restart(process.pk)
    item = InboxItem.objects.get(about=ToolCall.objects.get(tool="bump").public_id)
    # when the person rejects running it again
    answer_item(item, {"decision": "reject", "comment": "it went through"}, by=alice.user)
    drive_lane(process.pk)
    # then the call stays run once, and the model reads that it was treated as done
    done = ThinkProcess.objects.get(pk=process.pk)
    assert (done.status, done.close_reason) == (Status.CLOSED, CloseReason.DONE), done.last_error
    assert len(bumps(bump_file)) == 1
    assert TREATED_AS_DONE in done.engine_state["result"]
    assert ToolCall.objects.get(tool="bump").decision == Decision.TREAT_AS_DONE
    # and a second answer changes nothing
    with pytest.raises(Exception, match="ANSWERED"):
        answer_item(item, {"decision": "approve"}, by=alice.user)
    assert len(bumps(bump_file)) == 1


def test_an_idempotent_tool_left_without_a_result_runs_again_with_the_same_key(
    alice, llm, bump_file, crash_at, woken
):
    # given a tool that declares idempotentHint, and a worker that died while it ran
    process, provider = worker_calling(alice, llm, "bump_idempotent")
    killed_at(process.pk, crash_at, "tool-ran")
    # when the lane comes back
    restart(process.pk)
    # then it ran again without asking anyone, told the same idempotency key both times
    done = ThinkProcess.objects.get(pk=process.pk)
    assert (done.status, done.close_reason) == (Status.CLOSED, CloseReason.DONE), done.last_error
    call = ToolCall.objects.get(tool="bump_idempotent")
    runs = bumps(bump_file)
    assert len(runs) == 2
    assert {run["idempotencyKey"] for run in runs} == {call.idempotency_key}
    assert call.idempotency_key == f"{process.public_id}.1.1"
    assert not InboxItem.objects.filter(about=call.public_id).exists()


def test_a_chat_turn_retried_before_its_commit_sends_the_persons_message_once(
    alice, llm, crash_at, woken
):
    # given a chat whose worker dies after the answer, before the commit
    llm([])
    session = open_session(alice)
    send_chat(session.pk, "hello there")
    killed_at(session.chat_process_id, crash_at, "turn-committing")
    # when the lane comes back
    restart(session.chat_process_id)
    # then the person's message and the answer are in the chat once each
    chat = SessionEvent.objects.filter(session_id=session.pk, event="chat-message").order_by("seq")
    assert [(e.data["role"], e.data["text"]) for e in chat] == [
        ("user", "hello there"),
        ("assistant", "echo: hello there"),
    ]
