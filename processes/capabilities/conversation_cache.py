"""Committed conversations of recently driven processes, kept per worker OS process.

Only the lane holder appends to a conversation, and every append moves the process's
`conversation_length` (a reset or an undo moves `conversation_epoch`); an entry is used only
while both match the row's, so a turn reads nothing but what it must (the history grows, the
cost of a turn does not). An entry holds the messages the LLM is sent: not those an undo took
back, so its length can be less than the stored length it is kept under.

The cache is bounded by size (VANCETOPE_CONVERSATION_CACHE_MB), not by a count of processes:
a Brain serving more chats than a fixed count, each in turn, would evict every conversation
just before its next turn and read each history again from the database on every turn.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from django.conf import settings

from vancetope.llm.base import LlmMessage

# About what one message costs besides its text (the objects, the tuple slot), in bytes.
MESSAGE_OVERHEAD = 200

Key = tuple[int, int]
_entries: OrderedDict[int, tuple[Key, tuple[LlmMessage, ...], int]] = OrderedDict()
_size = 0
_lock = threading.Lock()


def size_of(messages: tuple[LlmMessage, ...]) -> int:
    """About how many bytes `messages` hold: their text and tool calls, and the overhead."""
    return sum(
        MESSAGE_OVERHEAD + len(m.content) + sum(len(str(call)) for call in m.tool_calls)
        for m in messages
    )


def budget() -> int:
    return int(float(settings.VANCETOPE_CONVERSATION_CACHE_MB) * 1024 * 1024)


def get(process_id: int, epoch: int, length: int) -> tuple[LlmMessage, ...] | None:
    with _lock:
        entry = _entries.get(process_id)
        if entry is None or entry[0] != (epoch, length):
            return None
        _entries.move_to_end(process_id)
        return entry[1]


def put(
    process_id: int,
    epoch: int,
    messages: tuple[LlmMessage, ...],
    length: int | None = None,
    *,
    extends: tuple[LlmMessage, ...] | None = None,
) -> None:
    """Keep `messages` for the process's stored (epoch, length); the length is that of the
    messages unless some stored ones are left out (undone). `extends`: the messages kept so
    far, which `messages` continues (a committed turn's); while they are still the kept
    entry, only the new messages are sized, so a turn's cost does not grow with its history.
    The least recently used conversations go while the cache is over its budget (one larger
    than the whole budget is not kept)."""
    global _size
    stored = len(messages) if length is None else length
    limit = budget()
    with _lock:
        earlier = _entries.pop(process_id, None)
        if earlier is not None and extends is not None and earlier[1] is extends:
            size = earlier[2] + size_of(messages[len(extends) :])
        else:
            size = size_of(messages)
        if earlier is not None:
            _size -= earlier[2]
        if size > limit:
            return
        _entries[process_id] = ((epoch, stored), messages, size)
        _size += size
        while _size > limit:
            _, (_, _, dropped) = _entries.popitem(last=False)
            _size -= dropped


def held_bytes() -> int:
    """What the cache holds now, by size_of."""
    with _lock:
        return _size


def clear() -> None:
    global _size
    with _lock:
        _entries.clear()
        _size = 0
