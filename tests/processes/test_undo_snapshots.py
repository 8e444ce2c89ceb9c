"""The cost of keeping what an undo needs: the snapshot rides on the statement that consumes
the message (no statement of its own), and only every VANCETOPE_UNDO_KEEP_TURNS consumed
messages does a commit clear older snapshots, in one statement."""

from __future__ import annotations

from typing import Any

import pytest

from processes.models import PendingMessage
from tests.support.turn_queries import LANE, PENDING, shape, shapes

pytestmark = pytest.mark.django_db(transaction=True)


def consuming(captured: Any) -> list[str]:
    """The statements that consume a message (the turn's journal writes its message too, before
    the commit: processes/lane/journal.py)."""
    return [
        q["sql"]
        for q in captured.captured_queries
        if shape(q["sql"]) == f"UPDATE {PENDING}" and "consumed_fence" in q["sql"]
    ]


def test_the_snapshot_is_written_by_the_statement_that_consumes_the_message(chat, settings):
    settings.VANCETOPE_UNDO_KEEP_TURNS = 20
    chat("hello")
    _, driving = chat("again")
    [statement] = consuming(driving)
    assert "undo_snapshot" in statement
    assert shapes(driving) == LANE
    kept = PendingMessage.objects.get(seq=2).undo_snapshot
    assert kept is not None
    assert kept["conversationLength"] == 2
    assert set(kept) == {"engineState", "engineParams", "conversationLength", "at"}


def test_every_keep_turns_consumed_messages_one_statement_clears_older_snapshots(chat, settings):
    settings.VANCETOPE_UNDO_KEEP_TURNS = 2
    chat("one")
    chat("two")
    _, third = chat("three")
    assert len(consuming(third)) == 1
    # the fourth consumed message is a multiple of 2: its commit clears what is older than 2
    _, fourth = chat("four")
    assert len(consuming(fourth)) == 2
    kept = PendingMessage.objects.filter(undo_snapshot__isnull=False)
    assert sorted(kept.values_list("seq", flat=True)) == [3, 4]
