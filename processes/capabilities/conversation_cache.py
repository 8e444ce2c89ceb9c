"""Committed conversations of recently driven processes, kept per worker OS process.

Only the lane holder appends to a conversation, and every append moves the process's
`conversation_length` (a reset moves `conversation_epoch`); an entry is used only while both
match the row's, so a turn
reads nothing but what it must (the history grows, the cost of a turn does not).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from vancetope.llm.base import LlmMessage

CAPACITY = 256

_entries: OrderedDict[int, tuple[tuple[int, int], tuple[LlmMessage, ...]]] = OrderedDict()
_lock = threading.Lock()


def get(process_id: int, epoch: int, length: int) -> tuple[LlmMessage, ...] | None:
    with _lock:
        entry = _entries.get(process_id)
        if entry is None or entry[0] != (epoch, length):
            return None
        _entries.move_to_end(process_id)
        return entry[1]


def put(process_id: int, epoch: int, messages: tuple[LlmMessage, ...]) -> None:
    with _lock:
        _entries[process_id] = ((epoch, len(messages)), messages)
        _entries.move_to_end(process_id)
        while len(_entries) > CAPACITY:
            _entries.popitem(last=False)


def clear() -> None:
    with _lock:
        _entries.clear()
