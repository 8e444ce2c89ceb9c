"""Committed conversations of recently driven processes, kept per worker OS process.

Only the lane holder appends to a conversation, and every append moves the process's
`conversation_length` (a reset or an undo moves `conversation_epoch`); an entry is used only
while both match the row's, so a turn reads nothing but what it must (the history grows, the
cost of a turn does not). An entry holds the messages the LLM is sent: not those an undo took
back, so its length can be less than the stored length it is kept under.
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


def put(
    process_id: int, epoch: int, messages: tuple[LlmMessage, ...], length: int | None = None
) -> None:
    """Keep `messages` for the process's stored (epoch, length); the length is that of the
    messages unless some stored ones are left out (undone)."""
    with _lock:
        stored = len(messages) if length is None else length
        _entries[process_id] = ((epoch, stored), messages)
        _entries.move_to_end(process_id)
        while len(_entries) > CAPACITY:
            _entries.popitem(last=False)


def clear() -> None:
    with _lock:
        _entries.clear()
