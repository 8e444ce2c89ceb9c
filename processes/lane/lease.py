"""Lanes: every lifecycle call and every turn of one process runs serially, across all workers.

A lane is a lease on the process row (owner, expiry, fence), taken by compare-and-swap, so it
works the same on SQLite and PostgreSQL and across hosts. No database transaction stays open
while the lease is held: an LLM call can take minutes. The fence grows with every acquisition;
every write a lane holder makes is conditional on its fence, so a worker that lost its lease
(expired, taken over after a crash) cannot write any more.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import QuerySet
from django.utils import timezone

from processes.models import ThinkProcess
from sessions_app.models import Session, SessionStatus
from vancetope.config.cascade import revision_sql
from vancetope.errors import TurnControl
from vancetope.infra import fastsql
from vancetope.tenancy.models import Project
from vancetope.tools.health import health_revision_sql

HOSTNAME = socket.gethostname()
# A session's client is bound while the session is OPEN (a constant in the lease's statement).
OPEN = SessionStatus.OPEN.value
log = logging.getLogger(__name__)


class LeaseLost(TurnControl):
    """The lease expired or was taken over; the holder must stop without writing."""


@dataclass(frozen=True)
class SessionClient:
    """Where the process's session's client is, as the lease found it: whether one is bound
    (the session OPEN and not a system one) and the tools it registered (the JSON as stored)."""

    bound: bool
    tools: Any


@dataclass
class Lease:
    process_id: int
    owner: str
    fence: int
    expires_at: datetime
    # Set once the lane is let go (by release, or by the commit that ended the run).
    released: bool = False
    # Set when the commit that ended the run stored the process's report to its parent.
    reported: bool = False
    # Set by a commit whose turn's last call came near its model's window: the lane folds the
    # conversation's oldest turns after the run (processes/lane/compaction.py).
    compact_due: bool = False
    # The process row as the acquisition left it (read in the same statement).
    process: ThinkProcess | None = None
    # The settings revision when the lane was taken (read in the same statement): the
    # lane's calls use the settings of this revision (vancetope/config/cascade.py).
    settings_revision: int = 0
    # The slug of the process's project (read in the same statement): the label of its LLM
    # metrics and an attribute of its spans.
    project_slug: str = ""
    # The tool health revision when the lane was taken (read in the same statement): the
    # lane's tool pools mark the tools that were down at this revision (tools/health.py).
    tool_health_revision: int = 0
    # The session's client when the lane was taken (read in the same statement): the tools
    # need not read the session row (None: the session was not found).
    session_client: SessionClient | None = None

    def fenced(self) -> QuerySet[ThinkProcess]:
        """The process row, only while this lease still holds it."""
        return ThinkProcess.objects.filter(
            pk=self.process_id, lease_owner=self.owner, lease_fence=self.fence
        )

    def update(self, changes: dict[str, Any], where: str = "", params: Sequence[Any] = ()) -> int:
        """Change the process row only while this lease still holds it (and `where`, if
        given, holds too); returns 1 if it did, 0 if not. The turn path's fenced write."""
        fenced = "{id} = %s AND {lease_owner} = %s AND {lease_fence} = %s"
        return fastsql.update(
            ThinkProcess,
            f"{fenced} AND {where}" if where else fenced,
            [self.process_id, self.owner, self.fence, *params],
            changes,
        )


def lease_seconds() -> float:
    return float(settings.VANCETOPE_LEASE_SECONDS)


def new_owner() -> str:
    """host:pid:thread:random — the host and pid let a restarted Brain spot its dead leases."""
    return f"{HOSTNAME}:{os.getpid()}:{threading.get_ident()}:{os.urandom(4).hex()}"


def owner_is_dead(owner: str) -> bool:
    """True when the owner was a process on this host that no longer runs."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != HOSTNAME or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def try_acquire(process_id: int, owner: str | None = None) -> Lease | None:
    owner = owner or new_owner()
    now = timezone.now()
    expires = now + timedelta(seconds=lease_seconds())
    # One compare-and-swap statement: free (or expired) → ours, with the next fence; it
    # returns the row, so the holder need not read it again, and the settings revision, so
    # the holder knows without a statement of its own whether its cached settings are current.
    taken = fastsql.update_returning(
        ThinkProcess,
        "{id} = %s AND ({lease_owner} = '' OR {lease_expires_at} < %s)",
        [process_id, connection.ops.adapt_datetimefield_value(now)],
        {"lease_owner": owner, "lease_expires_at": expires, "lease_fence": fastsql.Add(1)},
        also=[
            ("settings_revision", revision_sql()),
            ("project_slug", project_slug_sql()),
            ("tool_health_revision", health_revision_sql()),
            ("session_bound", session_sql(f"{{status}} = '{OPEN}' AND NOT {{system}}")),
            ("session_client_tools", session_sql("{client_tools}")),
        ],
    )
    if not taken:
        return None
    row = taken[0]
    found = row.__dict__
    bound = found.pop("session_bound", None)
    tools = found.pop("session_client_tools", None)
    return Lease(
        process_id,
        owner,
        row.lease_fence,
        expires,
        process=row,
        settings_revision=int(found.pop("settings_revision", None) or 0),
        project_slug=str(found.pop("project_slug", None) or ""),
        tool_health_revision=int(found.pop("tool_health_revision", None) or 0),
        session_client=None if bound is None else SessionClient(bool(bound), tools),
    )


def session_sql(expression: str) -> str:
    """`expression` over the process's session row, as a scalar subquery beside the lease's
    statement on the process row (`{field}` names a Session column)."""
    session = f"{fastsql.table(ThinkProcess)}.{fastsql.col(ThinkProcess, 'session')}"
    return fastsql.sql(Session, f"(SELECT {expression} FROM {{table}} WHERE {{id}} = {session})")


def project_slug_sql() -> str:
    """The slug of the process's project, as a scalar subquery beside the lease's statement
    on the process row."""
    slug = fastsql.sql(Project, "(SELECT {slug} FROM {table} WHERE {id} = ")
    project = fastsql.sql(Session, "(SELECT {project_id} FROM {table} WHERE {id} = ")
    session = f"{fastsql.table(ThinkProcess)}.{fastsql.col(ThinkProcess, 'session')}"
    return f"{slug}{project}{session}))"


def acquire(process_id: int, wait: float, owner: str | None = None) -> Lease | None:
    """Take the lane, waiting up to `wait` seconds for the current holder to let go."""
    deadline = time.monotonic() + wait
    delay = 0.002
    while True:
        lease = try_acquire(process_id, owner)
        if lease is not None or time.monotonic() >= deadline:
            return lease
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)


def heartbeat(lease: Lease) -> None:
    """Extend the lease; raise LeaseLost if it is no longer ours."""
    expires = timezone.now() + timedelta(seconds=lease_seconds())
    if lease.update({"lease_expires_at": expires}) != 1:
        raise LeaseLost(f"lease on tp_{lease.process_id} lost")
    lease.expires_at = expires


def release(lease: Lease) -> None:
    lease.update({"lease_owner": "", "lease_expires_at": None})
    lease.released = True


class LeaseKeeper:
    """Keeps a held lease alive while a block runs, so a long LLM call that streams nothing
    keeps its lane; if the lease is lost, `lost` is set and the holder stops at its next
    boundary (its writes would be refused by the fence anyway).

    The beats come from one thread per OS process (`_Heartbeats`), not a thread per lease: a
    turn costs no thread start, and a thousand held leases cost one thread."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        self.lost = threading.Event()
        self.next_beat = 0.0
        # True while the heartbeat thread is writing this lease's beat.
        self.beating = False

    def __enter__(self) -> LeaseKeeper:
        _heartbeats().add(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _heartbeats().remove(self)


class _Heartbeats:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self._keepers: set[LeaseKeeper] = set()
        self._changed = threading.Condition()
        self._wake_at = 0.0
        self._thread = threading.Thread(target=self._run, name="lease-heartbeats", daemon=True)
        self._thread.start()

    def add(self, keeper: LeaseKeeper) -> None:
        with self._changed:
            keeper.next_beat = time.monotonic() + lease_seconds() / 3
            self._keepers.add(keeper)
            if keeper.next_beat < self._wake_at:
                # Only a beat due before the thread's next wake-up needs to wake it; in a
                # busy Brain that is rare, so a turn does not cost the thread a wake-up.
                self._changed.notify()

    def remove(self, keeper: LeaseKeeper) -> None:
        """Stop beating `keeper`; once this returns no beat of it is in flight, so the lane's
        holder may let go (and a test may flush the tables) without racing a beat."""
        with self._changed:
            self._keepers.discard(keeper)
            while keeper.beating and threading.current_thread() is not self._thread:
                self._changed.wait()

    def _begin_beat(self, keeper: LeaseKeeper) -> bool:
        """Claim `keeper`'s beat unless it was removed since it fell due."""
        with self._changed:
            keeper.beating = keeper in self._keepers
            return keeper.beating

    def _end_beat(self, keeper: LeaseKeeper) -> None:
        with self._changed:
            keeper.beating = False
            self._changed.notify_all()

    def _due(self) -> list[LeaseKeeper]:
        """Wait until a keeper is due; return the due ones."""
        with self._changed:
            while True:
                now = time.monotonic()
                due = [keeper for keeper in self._keepers if keeper.next_beat <= now]
                if due:
                    for keeper in due:
                        keeper.next_beat = now + lease_seconds() / 3
                    return due
                # Wake at least once per beat interval even with nothing to beat.
                self._wake_at = min(
                    (keeper.next_beat for keeper in self._keepers),
                    default=now + lease_seconds() / 3,
                )
                self._changed.wait(self._wake_at - now)

    def _run(self) -> None:
        while True:
            for keeper in self._due():
                if not self._begin_beat(keeper):
                    continue
                try:
                    heartbeat(keeper.lease)
                except LeaseLost:
                    keeper.lost.set()
                    self.remove(keeper)
                except Exception:
                    # A database hiccup: try again next beat; the lease outlives a few misses.
                    log.exception("heartbeat of tp_%s failed", keeper.lease.process_id)
                    close_old_connections()
                finally:
                    self._end_beat(keeper)


_heartbeat_thread: _Heartbeats | None = None
_heartbeat_lock = threading.Lock()


def _heartbeats() -> _Heartbeats:
    global _heartbeat_thread
    with _heartbeat_lock:
        # A forked worker process does not inherit the parent's thread.
        if _heartbeat_thread is None or _heartbeat_thread.pid != os.getpid():
            _heartbeat_thread = _Heartbeats()
        return _heartbeat_thread


@contextmanager
def holding(lease: Lease, *, hand_over: bool = False) -> Iterator[LeaseKeeper]:
    """Keep the lease alive while the block runs, then let the lane go (unless the block's
    last commit already did). With `hand_over`, a block that ends without an exception keeps
    the lane for the caller, who drives it next or lets it go."""
    handed = False
    try:
        with LeaseKeeper(lease) as keeper:
            yield keeper
        handed = hand_over
    finally:
        if not lease.released and not handed:
            release(lease)
