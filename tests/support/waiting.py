"""Waiting for the database to show an outcome: polling with a fine interval until a check
holds (a turn runs on a worker thread or another OS process), and the common waits on a process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

from processes.models import ThinkProcess

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.01) -> T:
    """Poll `check` until it returns something truthy; fail with the last value otherwise.
    The default leaves room for CI, where two test runs share two cores with the Brains they
    start: a turn that takes 0.2 s alone took over 10 s there."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value:
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s (last value: {value!r})")
        time.sleep(interval)
        value = check()
    return value


def closed_process(process_id: int, timeout: float = 20.0) -> ThinkProcess:
    """The process once it is CLOSED: a worker's goal runs in the turn its start queued, so
    the goal's work is done (and reported) when this returns."""
    found = wait_until(
        lambda: ThinkProcess.objects.filter(pk=process_id, status="CLOSED").first(),
        timeout=timeout,
    )
    assert found is not None
    return found


def settled(process_id: int, *statuses: str, timeout: float = 20) -> ThinkProcess:
    """The process once it is in one of `statuses` with nothing pending."""

    def check() -> ThinkProcess | None:
        row = ThinkProcess.objects.get(pk=process_id)
        return row if row.status in statuses and row.waiting == 0 else None

    found = wait_until(check, timeout=timeout)
    assert found is not None
    return found


def at_rest(process_id: int, status: str, timeout: float = 20) -> ThinkProcess:
    """The process once it is in `status` and no worker holds its lease any more."""

    def check() -> ThinkProcess | None:
        row = ThinkProcess.objects.get(pk=process_id)
        return row if row.status == status and not row.lease_owner else None

    found = wait_until(check, timeout=timeout)
    assert found is not None
    return found
