"""Which handler answers which frame type: one table, built from one module per area.
The consumer (gateway/consumer.py) parses a frame and calls its handler from here;
tests/gateway/test_frame_table.py holds the table to the protocol's frame types."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.frames import (
    catalogue,
    inbox,
    memory,
    processes,
    sessions,
    spaces,
    steers,
    undo,
    workflows,
)
from gateway.frames.socket import FrameHandler

AREAS = (sessions, processes, steers, undo, catalogue, inbox, workflows, spaces, memory)


def _table() -> dict[str, FrameHandler]:
    table: dict[str, FrameHandler] = {}
    for area in AREAS:
        for kind, handler in area.HANDLERS.items():
            if kind in table:
                raise ValueError(f"two handlers for the frame type {kind!r}")
            table[kind] = handler
    return table


FRAME_HANDLERS: Mapping[str, FrameHandler] = _table()
