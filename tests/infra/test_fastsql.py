"""The turn path's prepared SQL reads and writes what the ORM reads and writes, on SQLite and
(in CI) on PostgreSQL, and names columns only through the models' fields."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import IntegrityError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from processes.models import ConversationMessage, PendingKind, PendingMessage, ThinkProcess
from sessions_app.models import Session, SessionEvent
from tests.support.tenancy import open_session
from triggers import transitions
from triggers.models import RunLog, RunStatus, TriggerType
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
    [fast] = fastsql.select(ThinkProcess, "{id} = %s", [session.chat_process_id])
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
    where = "{process_id} = %s AND {consumed} = %s"
    assert fastsql.select(PendingMessage, where, [session.chat_process_id, False]) == []
    for seq in (3, 1, 2):
        PendingMessage.objects.create(
            process_id=session.chat_process_id, seq=seq, kind=PendingKind.USER
        )
    first = fastsql.select(
        PendingMessage, where, [session.chat_process_id, False], tail="ORDER BY {seq} LIMIT 1"
    )
    assert [message.seq for message in first] == [1]


def test_values_are_the_named_fields_converted_as_the_orm_converts_them(alice):
    # given
    session = open_session(alice)
    pk = session.chat_process_id
    now = timezone.now()
    ThinkProcess.objects.filter(pk=pk).update(engine_state={"k": [1]}, interrupt_at=now)
    names = ["status", "engine_state", "interrupt_at", "session"]
    orm = list(ThinkProcess.objects.filter(pk=pk).values_list(*names))
    # when
    fast = fastsql.values(ThinkProcess, names, "{id} = %s", [pk])
    # then
    assert [tuple(row) for row in fast] == orm
    assert fast == [["IDLE", {"k": [1]}, now, session.pk]]
    assert fastsql.values(ThinkProcess, names, "{id} = %s", [pk + 1000]) == []


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
    assert (message._state.adding, message._state.db) == (False, "default")
    stored = PendingMessage.objects.get(pk=message.pk)
    assert stored.payload == {"text": 'hé "quoted" ünïcode', "n": [1, 2]}
    assert (stored.seq, stored.kind, stored.consumed) == (7, "STEER", False)
    assert stored.created_at == message.created_at


def test_insert_of_several_rows_is_one_statement_and_leaves_their_pks_unset(alice):
    # given
    session = open_session(alice)
    pk = session.chat_process_id
    rows = [
        ConversationMessage(process_id=pk, index=n, role="user", content=f"m{n}") for n in range(3)
    ]
    # when
    with transaction.atomic():
        fastsql.insert(rows)
    fastsql.insert([])  # nothing to store is no statement at all
    # then
    assert [row.pk for row in rows] == [None, None, None]
    stored = ConversationMessage.objects.filter(process_id=pk).order_by("index")
    assert [(row.index, row.role, row.content) for row in stored] == [
        (0, "user", "m0"),
        (1, "user", "m1"),
        (2, "user", "m2"),
    ]


def test_update_adds_sets_and_reports_the_rows_it_changed(alice):
    session = open_session(alice)
    pk = session.chat_process_id
    expires = timezone.now() + timedelta(seconds=30)
    with transaction.atomic():
        changed = fastsql.update(
            ThinkProcess,
            "{id} = %s",
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
    where = "{id} = %s AND {status} = %s"
    assert fastsql.update(ThinkProcess, where, [pk, "CLOSED"], {"goal": "x"}) == 0
    assert ThinkProcess.objects.get(pk=pk).goal == ""


def test_update_returning_gives_the_rows_as_the_update_left_them(alice):
    # given
    session = open_session(alice)
    pk = session.chat_process_id
    before = ThinkProcess.objects.get(pk=pk)
    # when
    with transaction.atomic():
        [after] = fastsql.update_returning(
            ThinkProcess,
            "{id} = %s",
            [pk],
            {"next_pending_seq": fastsql.Add(3), "lease_owner": "me"},
        )
    # then: the instance is the row as it is now, every field as the ORM reads it
    assert after.next_pending_seq == before.next_pending_seq + 3
    assert after.lease_owner == "me"
    orm = ThinkProcess.objects.get(pk=pk)
    for field in ThinkProcess._meta.concrete_fields:
        assert getattr(after, field.attname) == getattr(orm, field.attname), field.name
    assert fastsql.update_returning(ThinkProcess, "{id} = %s", [pk + 1000], {"goal": "x"}) == []


def test_update_returning_also_returns_scalar_expressions_as_attributes(alice):
    # given a process, and a scalar subquery about another table
    session = open_session(alice)
    pk = session.chat_process_id
    sessions = fastsql.sql(Session, "(SELECT COUNT(*) FROM {table})")
    # when
    with transaction.atomic():
        [after] = fastsql.update_returning(
            ThinkProcess,
            "{id} = %s",
            [pk],
            {"lease_owner": "me"},
            also=[("sessions", sessions)],
        )
        [plain] = fastsql.update_returning(ThinkProcess, "{id} = %s", [pk], {"lease_owner": ""})
    # then the row is as without it, with the expression's value beside it
    assert after.sessions == 1
    assert after.lease_owner == "me"
    assert not hasattr(plain, "sessions")


def test_scalar_reads_a_value_or_none_and_returns_what_a_write_returns(alice):
    session = open_session(alice)
    read = "SELECT {chat_process_id} FROM {table} WHERE {id} = %s"
    assert fastsql.scalar(Session, read, [session.pk]) == session.chat_process_id
    assert fastsql.scalar(Session, read, [session.pk + 1000]) is None
    with transaction.atomic():
        last = fastsql.scalar(
            Session,
            "UPDATE {table} SET {last_seq} = {last_seq} + %s WHERE {id} = %s RETURNING {last_seq}",
            [5, session.pk],
        )
    assert last == Session.objects.get(pk=session.pk).last_seq == session.last_seq + 5


def test_columns_and_tables_are_named_as_the_database_quotes_them():
    quote = connection.ops.quote_name
    assert fastsql.table(Session) == quote(Session._meta.db_table)
    assert fastsql.col(ThinkProcess, "lease_fence") == quote("lease_fence")
    # a foreign key by its name or its attname is its column
    assert fastsql.col(PendingMessage, "process") == quote("process_id")
    assert fastsql.col(PendingMessage, "process_id") == quote("process_id")
    assert fastsql.sql(ThinkProcess, "SELECT 1 FROM {table} WHERE {session} = %s") == (
        f"SELECT 1 FROM {quote(ThinkProcess._meta.db_table)} WHERE {quote('session_id')} = %s"
    )


@pytest.mark.parametrize(
    "name",
    [
        "no_such_field",  # renamed or removed
        "pending",  # a reverse relation has no column of this table
    ],
)
def test_a_name_that_is_not_a_column_of_the_model_fails_at_first_use(name):
    with pytest.raises(FieldDoesNotExist):
        fastsql.col(ThinkProcess, name)
    with pytest.raises(FieldDoesNotExist):
        fastsql.sql(ThinkProcess, f"{{{name}}} = %s")
    with pytest.raises(FieldDoesNotExist):
        fastsql.select(ThinkProcess, f"{{{name}}} = %s", [1])
    with pytest.raises(FieldDoesNotExist):
        fastsql.update(ThinkProcess, f"{{{name}}} = %s", [1], {"goal": "x"})
    with pytest.raises(FieldDoesNotExist):
        fastsql.update(ThinkProcess, "{id} = %s", [1], {name: "x"})
    with pytest.raises(FieldDoesNotExist):
        fastsql.scalar(ThinkProcess, f"SELECT {{{name}}} FROM {{table}}", [])


def test_a_built_statement_does_not_look_its_fields_up_again(alice, monkeypatch):
    # given: a read and a write built once
    session = open_session(alice)
    pk = session.chat_process_id
    where = "{id} = %s AND {status} <> %s"
    fastsql.select(ThinkProcess, where, [pk, "CLOSED"])
    fastsql.update(ThinkProcess, where, [pk, "CLOSED"], {"goal": "a"})

    # when: the model's fields can no longer be looked up
    def no_lookups(name: str) -> None:
        raise AssertionError(f"{name} looked up again")

    monkeypatch.setattr(ThinkProcess._meta, "get_field", no_lookups)
    # then: running them again needs no lookup
    assert [p.pk for p in fastsql.select(ThinkProcess, where, [pk, "CLOSED"])] == [pk]
    assert fastsql.update(ThinkProcess, where, [pk, "CLOSED"], {"goal": "b"}) == 1


def test_insert_values_stores_the_row_the_orm_stores_from_the_same_fields(alice):
    # given: the fields a person's run log names, and the ORM's row of them
    session = open_session(alice)
    named = {
        "owner_id": session.owner_id,
        "project_id": session.project_id,
        "session_id": session.pk,
        "client_type": "cli",
        "trigger_type": TriggerType.USER,
        "process_id": session.chat_process_id,
        "started_at": timezone.now(),
        "tasks_executed": 1,
        "status": RunStatus.COMPLETED,
    }
    orm = RunLog.objects.create(**named)
    # when: twice, so the second row is adapted from what the first kept
    fastsql.insert_values(RunLog, [named, {**named, "tasks_executed": 2}])
    # then: every column but the key is the ORM's (its defaults for the fields left out)
    first, second = RunLog.objects.exclude(pk=orm.pk).order_by("pk")
    for field in RunLog._meta.concrete_fields:
        if field.primary_key:
            continue
        assert getattr(first, field.attname) == getattr(orm, field.attname), field.name
    assert first.blocked_reasons == []
    assert (first.error, first.workflow_id) == ("", None)
    assert (second.tasks_executed, second.status) == (2, "completed")


def test_insert_values_returns_what_returning_names_with_a_subquery_about_another_table(alice):
    # given: two rows of a run log, and its project's slug as a subquery beside its id
    session = open_session(alice)
    named = {
        "owner_id": session.owner_id,
        "project_id": session.project_id,
        "client_type": "cli",
        "trigger_type": TriggerType.USER,
        "started_at": timezone.now(),
        "status": RunStatus.RUNNING,
    }
    slug = f"{{id}}, {transitions.project_slug_sql()}"
    # when
    returned = fastsql.insert_values(RunLog, [named, named], returning=slug)
    # then: each row's own id, in order, and the slug of its project
    stored = list(RunLog.objects.order_by("pk").values_list("pk", flat=True))
    assert [pk for pk, _ in returned] == stored
    assert {found for _, found in returned} == {session.project.slug}
    # and without `returning` nothing is fetched
    assert fastsql.insert_values(RunLog, [named]) == []


def test_insert_values_refuses_to_leave_out_a_field_set_on_save():
    with pytest.raises(ValueError, match="updated_at"):
        fastsql.insert_values(Session, [{"status": "OPEN"}])


@pytest.mark.parametrize(
    ("model", "name", "value"),
    [
        (RunLog, "status", RunStatus.BLOCKED),  # a str enum, as its value
        (RunLog, "status", "blocked"),
        (RunLog, "tasks_executed", 3),
        (RunLog, "owner", 1),
        (PendingMessage, "consumed", True),
        (PendingMessage, "consumed", False),
        (PendingMessage, "payload", {"text": "x"}),
        (PendingMessage, "undo_snapshot", None),
        (ThinkProcess, "lease_expires_at", timezone.now()),
    ],
)
def test_a_value_is_adapted_as_its_field_adapts_it_and_again_from_what_was_kept(model, name, value):
    field = model._meta.get_field(name)
    expected = field.get_db_prep_save(value, connection)
    for _ in range(2):
        adapted = fastsql.adapt(field, value, connection)
        # (PostgreSQL's JSON parameter is a wrapper of the value: compare what it wraps)
        assert adapted == expected or adapted.obj == expected.obj
        # (a str enum goes to the driver as a str: which of the two was kept first depends on
        # which test adapted the field first)
        assert isinstance(adapted, str if isinstance(expected, str) else type(expected))


def test_build_gives_the_instance_the_model_gives_from_the_same_fields():
    # given
    values = {"session_id": 3, "seq": 9, "event": "chat-delta", "data": {"text": "hé"}}
    # when
    built = fastsql.build(SessionEvent, values)
    # then: every field as SessionEvent(**values) has it, defaults for the rest
    expected = SessionEvent(**values)
    for field in SessionEvent._meta.concrete_fields:
        if field.name != "created_at":
            assert getattr(built, field.attname) == getattr(expected, field.attname), field.name
    assert built.created_at is not None
    assert (built.pk, built._state.adding, built.undone) == (None, True, False)
    # and a callable default (data: a new dict) is called for each instance
    first, second = (fastsql.build(SessionEvent, {"session_id": 3, "seq": n}) for n in (1, 2))
    assert first.data == second.data == {}
    assert first.data is not second.data


def test_build_refuses_a_name_that_is_not_an_attname():
    with pytest.raises(FieldDoesNotExist, match="session"):
        fastsql.build(SessionEvent, {"session": 3, "seq": 1})


def test_a_statement_that_breaks_a_constraint_raises_djangos_error_and_changes_nothing(alice):
    # given: a pending message at seq 1
    session = open_session(alice)
    process_id = session.chat_process_id
    PendingMessage.objects.create(process_id=process_id, seq=1, kind=PendingKind.USER)
    duplicate = fastsql.build(
        PendingMessage, {"process_id": process_id, "seq": 1, "kind": PendingKind.USER}
    )
    # when: a second row at the same seq, outside a transaction and inside one
    with pytest.raises(IntegrityError):
        fastsql.insert([duplicate], returning_pk=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        fastsql.insert_values(
            PendingMessage, [{"process_id": process_id, "seq": 1, "kind": PendingKind.USER}]
        )
    # then: the driver's error came as Django's, and the connection still works
    assert PendingMessage.objects.filter(process_id=process_id).count() == 1
    assert fastsql.update(PendingMessage, "{process_id} = %s", [process_id], {"seq": 2}) == 1


def test_a_transaction_that_must_roll_back_refuses_further_statements(alice):
    session = open_session(alice)
    PendingMessage.objects.create(process_id=session.chat_process_id, seq=1, kind=PendingKind.USER)
    with transaction.atomic():
        with pytest.raises(IntegrityError), transaction.atomic(savepoint=False):
            PendingMessage.objects.create(
                process_id=session.chat_process_id, seq=1, kind=PendingKind.USER
            )
        # The failed block without a savepoint marked the whole transaction for rollback.
        with pytest.raises(TransactionManagementError):
            fastsql.update(ThinkProcess, "{id} = %s", [session.chat_process_id], {"depth": 3})
    assert ThinkProcess.objects.get(pk=session.chat_process_id).depth == 0


def test_statements_are_seen_by_execute_wrappers_and_logged_while_queries_are(alice):
    session = open_session(alice)
    seen: list[str] = []

    def wrapper(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        fastsql.update(ThinkProcess, "{id} = %s", [session.chat_process_id], {"depth": 1})
    with CaptureQueriesContext(connection) as captured:
        fastsql.update(ThinkProcess, "{id} = %s", [session.chat_process_id], {"depth": 2})
    assert [sql.split()[0] for sql in seen] == ["UPDATE"]
    assert [query["sql"].split()[0] for query in captured] == ["UPDATE"]
    assert ThinkProcess.objects.get(pk=session.chat_process_id).depth == 2
