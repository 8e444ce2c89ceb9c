"""Values kept per worker OS process, by key, the least recently used dropped past a size: what
a turn would otherwise read or make again on every call (a process's compaction in use, the
index of its folded turns). A key names everything the value depends on, so a kept value is
never stale; tests forget them all, since ids start again with every test's database."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Kept(Generic[V]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for `key`, or the one `make` makes (outside the lock: a slow make
        holds no other key up), kept from now on."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        made = make()
        with self._lock:
            self._values[key] = made
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return made

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
