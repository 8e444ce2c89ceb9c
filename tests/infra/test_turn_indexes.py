"""The tables a chat turn writes carry no index that another index of theirs already leads
with: every row a turn inserts (or column it sets) writes each of its indexes' pages again, so
a redundant index is a write per turn for nothing. Runs on SQLite and (in CI) on PostgreSQL,
on the schema the migrations made."""

from __future__ import annotations

import pytest
from django.db import connection

from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from sessions_app.models import SessionEvent
from triggers.models import RunLog

pytestmark = pytest.mark.django_db

# What a chat turn inserts into or updates, and the run it logs.
TURN_TABLES = [
    ThinkProcess,
    PendingMessage,
    ConversationMessage,
    SessionEvent,
    ProcessTransition,
    RunLog,
]


def indexes(table: str) -> list[tuple[str, ...]]:
    """The column lists of the table's indexes (unique ones included), primary key left out."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return [
        tuple(found["columns"])
        for found in constraints.values()
        if (found["index"] or found["unique"]) and not found["primary_key"]
    ]


@pytest.mark.parametrize("model", TURN_TABLES, ids=lambda model: model.__name__)
def test_no_index_repeats_the_leading_column_of_another(model):
    table = model._meta.db_table
    found = indexes(table)
    repeated = [
        columns
        for columns in found
        if len(columns) == 1 and any(other != columns and other[0] == columns[0] for other in found)
    ]
    assert repeated == [], f"{table}: {repeated} lead another index of {found}"


def test_the_lookups_a_turn_makes_still_have_their_index():
    # The indexes the dropped ones were folded into are there (a foreign key's lookups and
    # its cascades use them).
    assert ("process_id", "seq") in indexes(PendingMessage._meta.db_table)
    assert ("process_id", "index") in indexes(ConversationMessage._meta.db_table)
    assert ("session_id", "seq") in indexes(SessionEvent._meta.db_table)
    assert ("session_id", "status") in indexes(ThinkProcess._meta.db_table)
    assert ("owner_id", "started_at") in indexes(RunLog._meta.db_table)
