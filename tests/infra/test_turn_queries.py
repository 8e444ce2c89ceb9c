"""The statements of a chat turn, counted: a chat sent through processes.actions.steer, and
the lane draining it. A statement more (or a different one) on the hot path fails here, not
only as a slower benchmark. Runs on SQLite and (in CI) on PostgreSQL.

The lane runs in the test thread (`drive_lane`), so its statements are captured on this
thread's connection: the wake after the chat's commit is recorded instead of handed to a
worker.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from engines.builtin.arthur import ORCHESTRATION_NAMES
from processes.actions import steer
from processes.capabilities import conversation_cache
from processes.lane import dispatch
from processes.lane.driver import drive_lane
from processes.models import ConversationMessage, ProcessTransition, ThinkProcess
from processes.states import Status
from tests.config.helpers import set_value
from tests.support.tenancy import open_session
from tests.support.turn_queries import (
    CONVERSATION,
    LANE,
    PENDING,
    PROCESS,
    SESSION,
    shape,
    shapes,
)
from triggers.models import RunLog
from vancetope.config.cascade import current_revision
from vancetope.config.models import Scope, Setting, SettingsRevision
from vancetope.infra import revisions
from vancetope.llm.scripted import ScriptedProvider
from vancetope.tools import health as tool_health
from vancetope.tools.health import write_tool_health
from vancetope.tools.models import HealthStatus, ToolHealth, ToolHealthRevision

pytestmark = pytest.mark.django_db(transaction=True)

HEALTH = ToolHealth._meta.db_table
SETTING = Setting._meta.db_table
REVISION = SettingsRevision._meta.db_table
HEALTH_REVISION = ToolHealthRevision._meta.db_table

# send_chat: one transaction (BEGIN and COMMIT are round trips too, and counted).
CHAT = [
    "BEGIN",
    f"UPDATE {PROCESS}",  # take the message's seq; locks and returns the process row
    f"UPDATE {SESSION}",  # note the session's activity; locks and returns its row
    f"INSERT {PENDING}",  # the message, returning its id
    "COMMIT",
]
# The first chat of a session in this worker OS process reads the session's chat process
# first (cached afterwards).
FIRST_CHAT = [f"SELECT {SESSION}", *CHAT]

# The first turn of a process in this worker OS process reads its committed conversation
# (kept per worker afterwards) when it builds the prompt; a new
# process (the first chat of a session) has stored none, and reads nothing.
FIRST_LANE = LANE
# The first turn in this worker OS process of a process that has a conversation.
FIRST_LANE_WITH_HISTORY = [*LANE[:8], f"SELECT {CONVERSATION}", *LANE[8:]]

# Statements per vendor: (the chat, the lane). The same today on both.
COUNTS = {
    "sqlite": {"first chat": (6, 18), "next chat": (5, 18)},
    "postgresql": {"first chat": (6, 18), "next chat": (5, 18)},
}


def test_the_first_chat_of_a_session_runs_the_counted_statements(chat):
    # when
    chatting, driving = chat("hello")
    # then
    expected_chat, expected_lane = COUNTS[connection.vendor]["first chat"]
    assert (len(chatting), len(driving)) == (expected_chat, expected_lane), (
        shapes(chatting),
        shapes(driving),
    )
    assert shapes(chatting) == FIRST_CHAT
    assert shapes(driving) == FIRST_LANE


def test_a_chat_turn_runs_the_counted_statements(chat):
    # given: the session has chatted before in this worker
    chat("hello")
    # when
    chatting, driving = chat("and again")
    # then
    expected_chat, expected_lane = COUNTS[connection.vendor]["next chat"]
    assert (len(chatting), len(driving)) == (expected_chat, expected_lane), (
        shapes(chatting),
        shapes(driving),
    )
    assert shapes(chatting) == CHAT
    assert shapes(driving) == LANE
    # and each turn is one run of alice's, completed
    runs = RunLog.objects.order_by("pk")
    assert [(r.trigger_type, r.status, r.tasks_executed) for r in runs] == [
        ("user", "completed", 1),
        ("user", "completed", 1),
    ]


def test_a_worker_new_to_a_conversation_reads_it_once(chat):
    # given a session that has chatted, in a worker OS process that has not kept its history
    chat("hello")
    conversation_cache.clear()
    # when it chats again, and once more
    _, first = chat("after a restart")
    _, second = chat("and again")
    # then the first turn reads the conversation when it builds its prompt, the next nothing
    assert shapes(first) == FIRST_LANE_WITH_HISTORY
    assert shapes(second) == LANE


def test_stored_settings_cost_a_turn_one_statement_per_revision_and_worker(chat, alice):
    # given a session that has chatted, and then a value set at its project
    chat("hello")
    before = current_revision()
    set_value("arthur.maxSteps", Scope.PROJECT, alice.project, 4)
    assert current_revision() == before + 1
    # when it chats again, and once more
    _, first = chat("after the change")
    _, second = chat("and again")
    # then the first turn after the change reads the session's settings, once, right after
    # its message; the next turn, at the same revision, reads nothing more
    settings_read = f"SELECT {SETTING}"
    assert shapes(first) == [*LANE[:2], settings_read, *LANE[2:]]
    assert shapes(second) == LANE


def test_the_settings_revision_rides_on_the_statement_that_takes_the_lease(chat):
    # when
    _, driving = chat("hello")
    # then the lease's compare-and-swap returns the revision with the row: no statement of
    # its own
    take_lease = driving.captured_queries[0]["sql"]
    assert shape(take_lease) == f"UPDATE {PROCESS}"
    assert REVISION in take_lease


@pytest.fixture
def offered(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The tools each LLM call was offered, by name with their descriptions, in call order."""
    calls: list[dict[str, str]] = []
    stream = ScriptedProvider.stream

    def spy(provider: Any, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        calls.append({tool.name: tool.description for tool in tools or []})
        return stream(provider, messages, tools, *args, **kwargs)

    monkeypatch.setattr(ScriptedProvider, "stream", spy)
    return calls


def pool_tool(offered: dict[str, str]) -> str:
    """One of the tools of arthur's pool (the ones a verdict can mark, not its own)."""
    return next(name for name in sorted(offered) if name not in ORCHESTRATION_NAMES)


def test_a_tool_verdict_costs_a_turn_one_statement_per_revision_and_worker(chat, alice, offered):
    # given a session that has chatted (no verdict yet: no statement for the tools' health)
    chat("hello")
    tool = pool_tool(offered[-1])
    before = revisions.current_revision(ToolHealthRevision)
    # when agrajag finds one of its tools down
    write_tool_health(
        project_id=alice.project.pk,
        tool=tool,
        status=HealthStatus.DOWN,
        classification="auth",
        evidence="401 from the upstream",
    )
    _, first = chat("after the verdict")
    _, second = chat("and again")
    # then the verdict raised the revision; the first turn after it reads the project's down
    # tools once, when its engine offers its tools; the next turn, at the same revision, reads
    # nothing more; and both offer the tool marked down
    assert revisions.current_revision(ToolHealthRevision) == before + 1
    assert shapes(first) == [*LANE[:8], f"SELECT {HEALTH}", *LANE[8:]]
    assert shapes(second) == LANE
    assert offered[-2][tool].startswith("[DOWN: auth] ")
    assert offered[-1][tool].startswith("[DOWN: auth] ")


def test_a_verdict_written_elsewhere_reaches_a_worker_that_cached_the_healthy_tools(
    chat, alice, offered
):
    # given a worker that has read the project's tools at a revision where one was down
    tool_health.forget_cached()
    chat("hello")
    tool = pool_tool(offered[-1])
    write_tool_health(
        project_id=alice.project.pk,
        tool=tool,
        status=HealthStatus.DOWN,
        classification="auth",
        evidence="401",
    )
    chat("read the verdict")
    # when another process (any worker, any host: only the database is shared) finds it up
    ToolHealth.objects.filter(project_id=alice.project.pk, tool=tool).delete()
    chat("after the recovery")
    # then this worker's next turn offered it as healthy again
    assert offered[-2][tool].startswith("[DOWN: auth] ")
    assert not offered[-1][tool].startswith("[DOWN")


def test_where_the_client_is_rides_on_the_statement_that_takes_the_lease(chat):
    # when
    _, driving = chat("hello")
    # then the lease's compare-and-swap returns the session's client and the tool health
    # revision with the row; no statement reads the session or the tools' health
    take_lease = driving.captured_queries[0]["sql"]
    assert shape(take_lease) == f"UPDATE {PROCESS}"
    assert SESSION in take_lease
    assert HEALTH_REVISION in take_lease
    assert f"SELECT {SESSION}" not in shapes(driving)
    assert f"SELECT {HEALTH}" not in shapes(driving)


def test_a_turn_that_finds_another_message_waiting_keeps_the_lane_and_runs_it(
    alice, settings, monkeypatch
):
    # given a chat session whose lane is driven here, and an LLM during whose first call the
    # person sends a second message (the lane is RUNNING and holds the lease)
    settings.VANCETOPE_DELTA_INTERVAL_SECONDS = 60
    session = open_session(alice)
    woken: list[int] = []
    monkeypatch.setattr(dispatch, "dispatch_drive", woken.append)
    stream = ScriptedProvider.stream
    sent: list[str] = []

    def meanwhile(provider: Any, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if not sent:
            sent.append("second")
            steer.send_chat(session.pk, "second")
        return stream(provider, messages, *args, **kwargs)

    monkeypatch.setattr(ScriptedProvider, "stream", meanwhile)
    steer.send_chat(session.pk, "first")
    # when the lane drains
    with CaptureQueriesContext(connection) as driving:
        turns = drive_lane(session.chat_process_id)
    # then the first commit's one-statement end was refused (a message waits), so it went the
    # long way: the turn's row written, the next message read, the lane kept; the second turn
    # ended the run; both answers are stored, nothing waits, and the lane is free
    assert turns == 2
    updates = [shape(q["sql"]) for q in driving.captured_queries].count(f"UPDATE {PROCESS}")
    # the lease, RUNNING, the second message's seq, the refused end and the turn's row, and
    # the second turn's end
    assert updates == 1 + 1 + 1 + 2 + 1
    process = ThinkProcess.objects.get(pk=session.chat_process_id)
    assert (process.status, process.waiting, process.lease_owner) == (Status.IDLE, 0, "")
    answers = ConversationMessage.objects.filter(process=process, role="assistant")
    assert [m.content for m in answers.order_by("index")] == ["echo: first", "echo: second"]
    transitions = ProcessTransition.objects.filter(process=process).order_by("pk")
    assert [(t.from_status, t.to_status) for t in transitions][-2:] == [
        (Status.IDLE, Status.RUNNING),
        (Status.RUNNING, Status.IDLE),
    ]
