"""The statements of a chat turn, counted: a chat sent through processes.actions.steer, and
the lane draining it. A statement more (or a different one) on the hot path fails here, not
only as a slower benchmark. Runs on SQLite and (in CI) on PostgreSQL.

The lane runs in the test thread (`drive_lane`), so its statements are captured on this
thread's connection: the wake after the chat's commit is recorded instead of handed to a
worker.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.actions import steer
from processes.capabilities import conversation_cache
from processes.lane import boundary, wake
from processes.lane.driver import drive_lane
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.queries import forget_chat_process
from processes.states import Status
from sessions_app.models import Session, SessionEvent
from tests.config.helpers import set_value
from tests.conftest import open_session
from triggers.models import RunLog
from vancetope.config.cascade import current_revision
from vancetope.config.models import Scope, Setting, SettingsRevision
from vancetope.tools.models import ToolHealth

pytestmark = pytest.mark.django_db(transaction=True)

PROCESS = ThinkProcess._meta.db_table
PENDING = PendingMessage._meta.db_table
CONVERSATION = ConversationMessage._meta.db_table
TRANSITION = ProcessTransition._meta.db_table
SESSION = Session._meta.db_table
EVENT = SessionEvent._meta.db_table
HEALTH = ToolHealth._meta.db_table
RUN = RunLog._meta.db_table
SETTING = Setting._meta.db_table
REVISION = SettingsRevision._meta.db_table

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

# The lane draining the one message (arthur's turn that answers without calling a tool).
LANE = [
    # take the lease (compare-and-swap), returning the process row and the settings revision:
    # a worker that has the session's settings of that revision reads none (else one SELECT
    # of them follows the next statement)
    f"UPDATE {PROCESS}",
    f"SELECT {PENDING}",  # the next pending message
    # the engine shows the user's message at once, and with it the run starts (RUNNING)
    "BEGIN",
    f"UPDATE {PROCESS}",  # IDLE -> RUNNING, fenced by the lease
    f"INSERT {TRANSITION}",  # its record
    f"UPDATE {SESSION}",  # the events' seqs
    f"INSERT {EVENT}",  # process-status RUNNING, the user's chat-message
    "COMMIT",
    # arthur (the chat engine of a person's session) offers tools: who calls and where its
    # client is (the session, once), and which tools are healthy
    f"SELECT {SESSION}",
    f"SELECT {HEALTH}",
    # the commit of the turn, which also ends the run and lets the lane go
    "BEGIN",
    f"INSERT {CONVERSATION}",  # the user's message and the answer
    f"UPDATE {PROCESS}",  # usage, engine state, lengths, lease extended; fenced
    f"UPDATE {PENDING}",  # consume the message
    f"SELECT {PENDING}",  # any more work (unless an interrupt waits)?
    f"UPDATE {PROCESS}",  # RUNNING -> IDLE, lease let go
    f"INSERT {TRANSITION}",  # its record
    # the person's run log (trigger user), stored finished by the commit that ends the run:
    # the one statement a run log costs a turn (triggers/human_runs.py), returning its id
    # and project for its `run` event (stored with the other events below)
    f"INSERT {RUN}",
    f"UPDATE {SESSION}",  # the events' seqs
    f"INSERT {EVENT}",  # the held deltas, the answer's chat-message, process-status IDLE
    "COMMIT",
]
# The first turn of a process in this worker OS process reads its committed conversation
# (kept per worker afterwards) when it builds the prompt, after reading its tools.
FIRST_LANE = [*LANE[:10], f"SELECT {CONVERSATION}", *LANE[10:]]

# Statements per vendor: (the chat, the lane). The same today on both.
COUNTS = {
    "sqlite": {"first chat": (6, 22), "next chat": (5, 21)},
    "postgresql": {"first chat": (6, 22), "next chat": (5, 21)},
}


def shape(sql: str) -> str:
    """A statement as its verb and the table it names first (BEGIN IMMEDIATE is BEGIN)."""
    verb = sql.split()[0].upper()
    table = re.search(r'\b(?:UPDATE|INTO|FROM)\s+"?(\w+)', sql)
    return verb if table is None else f"{verb} {table[1]}"


def shapes(captured: CaptureQueriesContext) -> list[str]:
    return [shape(query["sql"]) for query in captured.captured_queries]


@pytest.fixture
def chat(alice: Any, settings: Any, monkeypatch: pytest.MonkeyPatch):
    """A chat session whose lane is driven here: wakes are recorded, not run elsewhere;
    streamed text is joined for a minute and interrupts are looked for once a minute, so a
    slow machine does not add statements."""
    settings.VANCETOPE_DELTA_INTERVAL_SECONDS = 60
    monkeypatch.setattr(boundary, "BOUNDARY_CHECK_SECONDS", 60)
    session = open_session(alice)
    woken: list[int] = []
    monkeypatch.setattr(wake, "dispatch_drive", woken.append)
    # As a worker OS process that has not seen this session or process yet.
    forget_chat_process(session.pk)
    conversation_cache.clear()

    def turn(text: str) -> tuple[CaptureQueriesContext, CaptureQueriesContext]:
        with CaptureQueriesContext(connection) as chatting:
            steer.send_chat(session.pk, text)
        assert woken.pop() == session.chat_process_id
        with CaptureQueriesContext(connection) as driving:
            assert drive_lane(session.chat_process_id) == 1
        process = ThinkProcess.objects.get(pk=session.chat_process_id)
        assert process.status == Status.IDLE
        assert process.waiting == 0
        return chatting, driving

    return turn


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
