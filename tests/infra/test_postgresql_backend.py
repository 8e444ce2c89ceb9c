"""PostgreSQL: the health check is skipped for a connection that has just worked, and runs as
Django's does for one that has been idle for longer; statements run often are prepared on the
server (CI runs these on PostgreSQL)."""

from __future__ import annotations

import os

import psycopg
import pytest
from django.db import OperationalError, close_old_connections, connection, connections

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="needs PostgreSQL: set DATABASE_URL (.ci/run does)",
    ),
]


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def terminate(pid: int) -> None:
    """End a server connection from outside, as a server restart or a network cut does."""
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def cut_after_request() -> int:
    """Our connection runs a query and ends its request, then is cut from outside; returns
    the server pid it had."""
    pid = backend_pid()
    close_old_connections()
    terminate(pid)
    return pid


def test_the_project_runs_on_its_postgresql_backend():
    assert type(connections["default"]).__module__ == "vancetope.infra.postgresql_backend.base"
    assert connection.health_check_enabled


def test_a_connection_idle_longer_than_the_window_is_checked_and_replaced(settings):
    # given: every kept connection counts as idle, and ours was cut after its last request
    settings.VANCETOPE_DB_CHECK_AFTER_IDLE_SECONDS = 0
    first = cut_after_request()
    # when: the next request begins and queries
    close_old_connections()
    second = backend_pid()
    # then: the check found the dead connection and the query ran on a new one
    assert second != first


def test_a_connection_that_just_worked_is_used_without_a_check(settings):
    # given: ours worked a moment ago, and is cut right after its request
    settings.VANCETOPE_DB_CHECK_AFTER_IDLE_SECONDS = 60
    first = cut_after_request()
    # when: the next request begins at once, it is not checked: its first query meets the cut
    close_old_connections()
    with pytest.raises(OperationalError):
        backend_pid()
    # then: a connection that failed is always checked (Django's rule), so the request after
    # it runs on a new connection
    close_old_connections()
    assert backend_pid() != first


def test_a_statement_run_often_is_prepared_on_the_server():
    # given: a connection of the project's settings (server-side binding, prepare threshold)
    query = "SELECT count(*) FROM processes_thinkprocess WHERE id = %s"
    # when: it runs the same statement more often than the threshold
    with connection.cursor() as cursor:
        for n in range(6):
            cursor.execute(query, [n])
        # then: the server holds it as a prepared statement of this connection
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("FROM processes_thinkprocess WHERE id = $1" in text for text in prepared), prepared
