"""The in-memory rate-limit storage counts as the library's does, without starting a thread
while it counts, and still drops what has expired."""

from __future__ import annotations

import threading
import time

import pytest
from limits import parse
from limits.strategies import MovingWindowRateLimiter

from vancetope.infra import ratelimit_memory
from vancetope.infra.ratelimit_memory import SweepingMemoryStorage


@pytest.fixture
def timer_starts(monkeypatch: pytest.MonkeyPatch) -> list[threading.Timer]:
    started: list[threading.Timer] = []
    original = threading.Timer.start

    def start(timer: threading.Timer) -> None:
        started.append(timer)
        original(timer)

    monkeypatch.setattr(threading.Timer, "start", start)
    return started


def test_counting_messages_a_few_milliseconds_apart_starts_no_thread(timer_starts):
    # given
    limiter = MovingWindowRateLimiter(SweepingMemoryStorage())
    timer_starts.clear()  # the library's constructor starts one timer, once
    window = parse("1000/10 seconds")
    # when: one message every 15 ms, longer apart than the library's 10 ms timer
    for _ in range(20):
        assert limiter.hit(window, "messages", "user-1")
        time.sleep(0.015)
    # then
    assert timer_starts == []


def test_the_moving_window_refuses_what_is_over_the_limit():
    # given
    limiter = MovingWindowRateLimiter(SweepingMemoryStorage())
    window = parse("3/minute")
    # when
    taken = [limiter.hit(window, "messages", "user-1") for _ in range(4)]
    # then
    assert taken == [True, True, True, False]
    assert limiter.hit(window, "messages", "user-2")
    assert limiter.get_window_stats(window, "messages", "user-1").remaining == 0


def test_expired_counts_are_dropped_by_a_later_call(monkeypatch: pytest.MonkeyPatch):
    # given a sweep due at every call, and a count in a one-second window
    monkeypatch.setattr(ratelimit_memory, "SWEEP_SECONDS", 0.0)
    storage = SweepingMemoryStorage()
    limiter = MovingWindowRateLimiter(storage)
    window = parse("5/second")
    assert limiter.hit(window, "messages", "user-1")
    assert len(storage.events) == 1
    # when the window has passed and another user is counted
    time.sleep(1.1)
    assert limiter.hit(window, "messages", "user-2")
    # then only the new count is held (the library keeps the first user's key, emptied)
    held = {key.split("/")[2]: len(entries) for key, entries in storage.events.items() if entries}
    assert held == {"user-2": 1}
