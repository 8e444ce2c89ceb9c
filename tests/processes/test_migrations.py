"""Migrations that fill new columns from existing rows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from processes.actions.steer import steer_process
from processes.models import PendingKind, PendingMessage, ThinkProcess
from tests.conftest import open_session, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("processes", "0002_conversation_epoch")]
AFTER = [("processes", "0003_consumed_count")]


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
        migrate(AFTER)
        # then: the column counts what was consumed; what waits is what is pending
        process = ThinkProcess.objects.get(pk=pid)
        assert process.consumed_count == 3
        assert process.waiting == 2
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
