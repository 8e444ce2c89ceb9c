"""The SQLite backend: writers of one OS process queue on one lock instead of in SQLite's busy
handler, the lock is let go however a write transaction ends, and the cached %s -> ?
rewrite gives the statement Django's own rewrite gives."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import cast

import pytest
from django.db import connection, transaction
from django.db.backends.sqlite3.base import SQLiteCursorWrapper

from vancetope.infra.sqlite_backend import base
from vancetope.tenancy.models import Tenant

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite backend"),
]


def in_thread(target: Callable[[], None], errors: list[BaseException]) -> threading.Thread:
    """`target` in a thread of its own (with its own connection, closed at the end)."""

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # the test is about any error at all
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


class Boom(Exception):
    pass


@pytest.mark.parametrize("second", ["a transaction", "a single statement"])
def test_a_second_writer_waits_for_the_first_instead_of_failing_as_locked(second):
    # given: one thread holds a write transaction open
    errors: list[BaseException] = []
    writing, finish = threading.Event(), threading.Event()

    def first() -> None:
        with transaction.atomic():
            Tenant.objects.create(slug="first", name="First")
            writing.set()
            finish.wait(10)

    def other() -> None:
        # SQLite's busy handler off for this connection: without the lock in Python it
        # would fail at once with "database is locked"
        connection.ensure_connection()
        connection.connection.execute("PRAGMA busy_timeout = 0")
        writing.wait(10)
        if second == "a transaction":
            with transaction.atomic():
                Tenant.objects.create(slug="second", name="Second")
        else:
            Tenant.objects.create(slug="second", name="Second")

    holder = in_thread(first, errors)
    assert writing.wait(10)
    # the database file really is locked for any other writer meanwhile
    raw = sqlite3.connect(connection.settings_dict["NAME"], timeout=0)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        raw.execute("BEGIN IMMEDIATE")
    raw.close()
    # when: a second thread writes while the first still holds its transaction
    waiter = in_thread(other, errors)
    waiter.join(0.3)
    assert waiter.is_alive(), "the second writer should wait for the first"
    finish.set()
    holder.join(10)
    waiter.join(10)
    # then: both wrote, in order, and no one met a locked database
    assert errors == []
    assert list(Tenant.objects.order_by("pk").values_list("slug", flat=True)) == [
        "first",
        "second",
    ]
    assert not base._write_lock.locked()


def write_lock() -> tuple[bool, bool]:
    """Whether this connection holds the write lock, and whether anyone does."""
    return cast(base.DatabaseWrapper, connection).holds_write_lock, base._write_lock.locked()


def test_the_write_lock_is_let_go_at_commit():
    with transaction.atomic():
        Tenant.objects.create(slug="a", name="A")
        assert write_lock() == (True, True)
    assert write_lock() == (False, False)


def test_the_write_lock_is_let_go_at_rollback():
    def write_then_fail() -> None:
        with transaction.atomic():
            Tenant.objects.create(slug="a", name="A")
            assert write_lock() == (True, True)
            raise Boom

    with pytest.raises(Boom):
        write_then_fail()
    assert write_lock() == (False, False)
    assert not Tenant.objects.exists()


def test_the_write_lock_is_let_go_when_the_connection_closes_mid_transaction():
    # given: a thread whose connection is closed inside its write transaction (a broken
    # connection being dropped)
    errors: list[BaseException] = []
    held_before_close: list[bool] = []

    def close_inside() -> None:
        with transaction.atomic():
            Tenant.objects.create(slug="a", name="A")
            held_before_close.append(base._write_lock.locked())
            connection.close()

    in_thread(close_inside, errors).join(10)
    # then: the lock went with the connection, and others write at once
    assert errors == []
    assert held_before_close == [True]
    assert not base._write_lock.locked()
    Tenant.objects.create(slug="b", name="B")
    assert list(Tenant.objects.values_list("slug", flat=True)) == ["b"]


def test_a_reader_goes_past_a_held_write_lock():
    # given: a writer of this process holds the lock
    errors: list[BaseException] = []
    counted: list[int] = []
    with transaction.atomic():
        Tenant.objects.create(slug="a", name="A")
        # when: another thread reads
        reader = in_thread(lambda: counted.append(Tenant.objects.count()), errors)
        reader.join(5)
        # then: it did not wait for the writer (and, WAL, sees the committed state)
        assert not reader.is_alive()
    assert errors == []
    assert counted == [0]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT %s",
        "SELECT %s, %s FROM t WHERE a = %s",
        "SELECT '100%%' WHERE x LIKE 'a%%' AND id = %s",
        "SELECT 1",
    ],
)
def test_the_cached_qmark_rewrite_is_djangos_rewrite(query):
    with connection.cursor() as cursor:
        ours = cursor.cursor
        assert isinstance(ours, base.CursorWrapper)
        # when: rewritten once (and cached) and once more (from the cache)
        first = ours.convert_query(query)
        again = ours.convert_query(query)
        # then: both are what Django's own rewrite gives
        assert first == again == SQLiteCursorWrapper.convert_query(ours, query)
        assert base._qmark_queries[query] == first


def test_named_parameters_are_rewritten_by_django_and_not_cached():
    query = "SELECT %(a)s, %(b)s"
    with connection.cursor() as cursor:
        ours = cursor.cursor
        converted = ours.convert_query(query, param_names=["a", "b"])
        assert converted == SQLiteCursorWrapper.convert_query(ours, query, param_names=["a", "b"])
        assert query not in base._qmark_queries
        cursor.execute(query, {"a": 1, "b": "x"})
        assert cursor.fetchone() == (1, "x")


def test_a_statement_runs_with_its_cached_rewrite_and_the_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(base, "QMARK_CACHE", 3)
    base._qmark_queries.clear()
    with connection.cursor() as cursor:
        for n in range(5):
            cursor.execute(f"SELECT %s + {n}, '100%%'", [1])
            assert cursor.fetchone() == (1 + n, "100%")
    assert len(base._qmark_queries) <= 3
