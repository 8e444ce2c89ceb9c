"""Boundaries of a turn: where a running turn looks for interrupts and for the loss of its lane.

A pause, suspend or stop that arrives while a turn runs is written on the process row as an
interrupt; the turn sees it at its next boundary (between LLM deltas, between tool polls) and
leaves with TurnInterrupted, its pending message still pending.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from django.utils import timezone

from processes.lane import lease as lanes
from processes.lane.worker import is_stopping
from processes.models import ThinkProcess
from processes.states import Call
from vancetope.errors import TurnControl

# An interrupt older than this is ignored: its caller gave up waiting long ago.
INTERRUPT_TTL = timedelta(minutes=2)
# How often a running turn looks at the database for interrupts and lease loss.
BOUNDARY_CHECK_SECONDS = 0.2


class TurnInterrupted(TurnControl):
    """A pause, suspend or stop (or shutdown) arrived: leave the turn at this boundary."""


def request_interrupt(process_id: int, call: Call) -> None:
    """Ask a running turn to stop at its next boundary, so this call gets the lane soon."""
    ThinkProcess.objects.filter(pk=process_id).update(
        interrupt=call.value, interrupt_at=timezone.now()
    )


def clear_interrupt(process_id: int, call: Call) -> None:
    ThinkProcess.objects.filter(pk=process_id, interrupt=call.value).update(
        interrupt="", interrupt_at=None
    )


def interrupt_is_fresh(interrupt: str, interrupt_at: Any) -> bool:
    return (
        bool(interrupt)
        and interrupt_at is not None
        and (timezone.now() - interrupt_at < INTERRUPT_TTL)
    )


class Boundary:
    """Called by the context between LLM deltas: stop when asked or when the lease is gone."""

    def __init__(self, keeper: lanes.LeaseKeeper) -> None:
        self._keeper = keeper
        self._lease = keeper.lease
        # Between messages the lane looks for interrupts itself; inside a turn, first after
        # one interval, then once per interval.
        self._next_check = time.monotonic() + BOUNDARY_CHECK_SECONDS

    def __call__(self) -> None:
        if self._keeper.lost.is_set():
            raise lanes.LeaseLost(f"lease on tp_{self._lease.process_id} lost")
        if is_stopping():
            raise TurnInterrupted("the worker is shutting down")
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + BOUNDARY_CHECK_SECONDS
        row = self._lease.fenced().values("interrupt", "interrupt_at").first()
        if row is None:
            raise lanes.LeaseLost(f"lease on tp_{self._lease.process_id} lost")
        if interrupt_is_fresh(row["interrupt"], row["interrupt_at"]):
            raise TurnInterrupted(row["interrupt"])
