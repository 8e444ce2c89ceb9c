"""Migrations that fill new columns from existing rows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from processes.actions.steer import steer_process
from processes.models import PendingKind, PendingMessage, ThinkProcess
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("processes", "0002_conversation_epoch")]
BEFORE_TREES = [("processes", "0003_consumed_count")]


def newest() -> list[tuple[str, str]]:
    """The newest processes migration: the model the test reads with has every later column."""
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes("processes")
    assert len(leaves) == 1, leaves
    return leaves


def migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def test_consumed_count_is_filled_from_the_consumed_messages(alice):
    # given: a process whose turns consumed three messages, and two more still pending
    session = open_session(alice)
    pid = session.chat_process_id
    for n in range(3):
        steer_process(pid, f"m{n}", PendingKind.USER)
    wait_until(lambda: PendingMessage.objects.filter(process_id=pid, consumed=True).count() == 3)
    ThinkProcess.objects.filter(pk=pid).update(status="PAUSED")
    steer_process(pid, "later 1")
    steer_process(pid, "later 2")
    try:
        # when: the database goes back to before the column, and forward again
        migrate(BEFORE)
        migrate(newest())
        # then: the column counts what was consumed; what waits is what is pending
        process = ThinkProcess.objects.get(pk=pid)
        assert process.consumed_count == 3
        assert process.waiting == 2
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_children_made_before_trees_get_their_depth_and_budget_root(alice):
    # given a worker under the chat process, and a grandchild under the worker, stored before
    # processes had depths and budget roots
    session = open_session(alice)
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    worker = ThinkProcess.objects.create(
        session=session, parent=chat, think_engine="ford", engine_version="1.0.0"
    )
    grandchild = ThinkProcess.objects.create(
        session=session, parent=worker, think_engine="ford", engine_version="1.0.0"
    )
    try:
        # when: the database goes back to before the columns, and forward again
        migrate(BEFORE_TREES)
        migrate(newest())
        # then: depths count from the top; the chat process is nobody's budget root
        placed = {p.pk: (p.depth, p.root_id) for p in ThinkProcess.objects.all()}
        assert placed[chat.pk] == (0, None)
        assert placed[worker.pk] == (1, None)
        assert placed[grandchild.pk] == (2, worker.pk)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
