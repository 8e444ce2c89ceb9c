"""The turn path's prepared SQL reads and writes what the ORM reads and writes, on SQLite and
(in CI) on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from processes.models import PendingKind, PendingMessage, ThinkProcess
from tests.conftest import open_session
from vancetope.infra import fastsql

pytestmark = pytest.mark.django_db(transaction=True)


def test_select_builds_the_instance_the_orm_builds(alice):
    # given: a process with JSON, datetime, boolean and nullable columns set
    session = open_session(alice)
    now = timezone.now()
    ThinkProcess.objects.filter(pk=session.chat_process_id).update(
        engine_state={"plan": ["a", "b"], "n": 2, "nested": {"ok": True}},
        context_drift=True,
        interrupt="pause",
        interrupt_at=now,
    )
    orm = ThinkProcess.objects.get(pk=session.chat_process_id)
    # when
    [fast] = fastsql.select(ThinkProcess, "id = %s", [session.chat_process_id])
    # then: every field has the same value and type
    for field in ThinkProcess._meta.concrete_fields:
        ours, theirs = getattr(fast, field.attname), getattr(orm, field.attname)
        assert ours == theirs, field.name
        assert type(ours) is type(theirs), field.name
    assert fast.interrupt_at == now
    assert fast._state.adding is False
    assert fast.session.pk == session.pk


def test_select_with_a_tail_and_no_rows(alice):
    session = open_session(alice)
    where = "process_id = %s AND consumed = %s"
    assert fastsql.select(PendingMessage, where, [session.chat_process_id, False]) == []
    for seq in (3, 1, 2):
        PendingMessage.objects.create(
            process_id=session.chat_process_id, seq=seq, kind=PendingKind.USER
        )
    first = fastsql.select(
        PendingMessage, where, [session.chat_process_id, False], tail="ORDER BY seq LIMIT 1"
    )
    assert [message.seq for message in first] == [1]


def test_insert_with_returning_pk_stores_the_row_as_the_orm_would(alice):
    session = open_session(alice)
    message = PendingMessage(
        process_id=session.chat_process_id,
        seq=7,
        kind=PendingKind.STEER,
        payload={"text": 'hé "quoted" ünïcode', "n": [1, 2]},
    )
    fastsql.insert([message], returning_pk=True)
    assert message.pk is not None
    stored = PendingMessage.objects.get(pk=message.pk)
    assert stored.payload == {"text": 'hé "quoted" ünïcode', "n": [1, 2]}
    assert (stored.seq, stored.kind, stored.consumed) == (7, "STEER", False)
    assert stored.created_at == message.created_at


def test_update_adds_sets_and_reports_the_rows_it_changed(alice):
    session = open_session(alice)
    pk = session.chat_process_id
    expires = timezone.now() + timedelta(seconds=30)
    with transaction.atomic():
        changed = fastsql.update(
            ThinkProcess,
            "id = %s",
            [pk],
            {
                "prompt_tokens": fastsql.Add(5),
                "engine_state": {"k": "v"},
                "lease_expires_at": expires,
            },
        )
    assert changed == 1
    process = ThinkProcess.objects.get(pk=pk)
    assert (process.prompt_tokens, process.engine_state) == (5, {"k": "v"})
    assert process.lease_expires_at == expires
    # a WHERE that does not hold changes nothing
    assert (
        fastsql.update(ThinkProcess, "id = %s AND status = %s", [pk, "CLOSED"], {"goal": "x"}) == 0
    )
    assert ThinkProcess.objects.get(pk=pk).goal == ""
