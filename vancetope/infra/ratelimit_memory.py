"""The `limits` library's in-memory storage without a thread per burst of counting.

`limits.storage.MemoryStorage` drops expired counts on a `threading.Timer` of 10 ms that it
starts again from every call once the last one has run: a process that counts a message every
few milliseconds (a busy Brain; a benchmark) starts a new OS thread for every other message,
and each then walks every key. The counts themselves do not depend on it (a moving window
compares each entry's time; a fixed window checks its expiry when read): the timer only frees
memory. Here the same sweep runs in the calling thread, at most once a second.
"""

from __future__ import annotations

import threading
import time

from limits.storage import MemoryStorage

# How often expired entries are dropped (seconds): what memory an expired count holds longest.
SWEEP_SECONDS = 1.0


class SweepingMemoryStorage(MemoryStorage):
    """MemoryStorage whose expired entries are dropped by the call that finds the last sweep a
    second old, not by a timer thread it starts."""

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: str):
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self._next_sweep = time.monotonic() + SWEEP_SECONDS
        self._sweep_lock = threading.Lock()

    def _MemoryStorage__schedule_expiry(self) -> None:  # noqa: N802 (the library's name)
        """Called by every MemoryStorage method that counts (the name MemoryStorage calls
        as `self.__schedule_expiry()`)."""
        now = time.monotonic()
        if now < self._next_sweep or not self._sweep_lock.acquire(blocking=False):
            return
        try:
            self._next_sweep = now + SWEEP_SECONDS
            self._MemoryStorage__expire_events()  # type: ignore[attr-defined]
        finally:
            self._sweep_lock.release()
