"""SQLite for a Brain with many threads: within one OS process, writers queue in Python.

SQLite lets one connection write at a time. A second writer waits in SQLite's busy handler,
which sleeps 1, 2, 5, 10, 15 … ms between tries, so under load a writer often sleeps long after
the lock is free: with lane threads, the ASGI threads and the heartbeat thread all writing,
those sleeps, not the writes, set the pace. Here every write transaction (and every write
statement outside one) of this process first takes one lock, and the next writer goes the
moment the previous one commits. Writers in other processes (a management command, a second
process on the same file) still meet the busy handler, as with the stock backend.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.db.backends.sqlite3 import base

# One writer at a time per OS process (SQLite allows one per database file anyway).
_write_lock = threading.Lock()
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def create_private(name: str) -> None:
    """Create the database file readable by its owner only (0600) before SQLite opens it:
    SQLite would create it by the umask (often 0644, world-readable: conversations, token
    hashes), and gives its -wal and -shm files the database file's permissions."""
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    try:
        os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return


class DatabaseWrapper(base.DatabaseWrapper):
    holds_write_lock = False

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        create_private(str(conn_params.get("database", "")))
        return super().get_new_connection(conn_params)

    def _start_transaction_under_autocommit(self) -> None:
        _write_lock.acquire()
        self.holds_write_lock = True
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._let_go()
            raise

    def _let_go(self) -> None:
        if self.holds_write_lock:
            self.holds_write_lock = False
            _write_lock.release()

    def _commit(self) -> None:
        try:
            super()._commit()  # type: ignore[misc]
        finally:
            self._let_go()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]
        finally:
            self._let_go()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]
        finally:
            self._let_go()

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = self.connection.cursor(factory=CursorWrapper)
        cursor.wrapper = self
        return cursor


# Statement text with %s placeholders → the same with SQLite's ? placeholders. Django rewrites
# every statement with a regular expression on every execution (12 µs for a statement that names
# every column of a process); the Brain runs the same few dozen statements again and again.
_qmark_queries: dict[str, str] = {}
QMARK_CACHE = 1000


class CursorWrapper(base.SQLiteCursorWrapper):
    """A write outside a transaction is a transaction of its own: it queues too."""

    wrapper: DatabaseWrapper

    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is not None:
            return super().convert_query(query, param_names=param_names)  # type: ignore[no-any-return]
        converted = _qmark_queries.get(query)
        if converted is None:
            converted = super().convert_query(query)
            if len(_qmark_queries) >= QMARK_CACHE:
                _qmark_queries.clear()
            _qmark_queries[query] = converted
        return converted

    def _queues(self, query: str) -> bool:
        return not self.wrapper.holds_write_lock and query.lstrip()[:7].upper().startswith(WRITES)

    def execute(self, query: str, params: Any = None) -> Any:
        if self._queues(query):
            with _write_lock:
                return super().execute(query, params)
        return super().execute(query, params)

    def executemany(self, query: str, param_list: Any) -> Any:
        if self._queues(query):
            with _write_lock:
                return super().executemany(query, param_list)
        return super().executemany(query, param_list)
