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
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, connections
from django.db.models import QuerySet
from django.utils import timezone

from processes.models import ThinkProcess

HOSTNAME = socket.gethostname()
log = logging.getLogger(__name__)


class LeaseLost(Exception):
    """The lease expired or was taken over; the holder must stop without writing."""


@dataclass
class Lease:
    process_id: int
    owner: str
    fence: int
    expires_at: datetime

    def fenced(self) -> QuerySet[ThinkProcess]:
        """The process row, only while this lease still holds it."""
        return ThinkProcess.objects.filter(
            pk=self.process_id, lease_owner=self.owner, lease_fence=self.fence
        )


def lease_seconds() -> float:
    return float(settings.VANCETOPE_LEASE_SECONDS)


def new_owner() -> str:
    """host:pid:thread:random — the host and pid let a restarted Brain spot its dead leases."""
    return f"{HOSTNAME}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"


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
    # One compare-and-swap statement: free (or expired) → ours, with the next fence.
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {ThinkProcess._meta.db_table} "
            "SET lease_owner = %s, lease_expires_at = %s, lease_fence = lease_fence + 1 "
            "WHERE id = %s AND (lease_owner = '' OR lease_expires_at < %s) "
            "RETURNING lease_fence",
            [owner, adapt(expires), process_id, adapt(now)],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return Lease(process_id, owner, int(row[0]), expires)


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
    if lease.fenced().update(lease_expires_at=expires) != 1:
        raise LeaseLost(f"lease on tp_{lease.process_id} lost")
    lease.expires_at = expires


def release(lease: Lease) -> None:
    lease.fenced().update(lease_owner="", lease_expires_at=None)


class LeaseKeeper:
    """Heartbeats a held lease from a side thread, so a long LLM call that streams nothing
    keeps its lane; if the lease is lost, `lost` is set and the holder stops at its next
    boundary (its writes would be refused by the fence anyway)."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        self.lost = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lease-tp_{lease.process_id}", daemon=True
        )

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            while not self._done.wait(lease_seconds() / 3):
                try:
                    heartbeat(self.lease)
                except LeaseLost:
                    self.lost.set()
                    return
                except Exception:
                    # A database hiccup: try again next beat; the lease outlives a few misses.
                    log.exception("heartbeat of tp_%s failed", self.lease.process_id)
        finally:
            connections.close_all()
