"""The frame handler table answers every frame type of the protocol, and only those."""

from __future__ import annotations

from gateway.frames.table import FRAME_HANDLERS
from protocol.inbound import FRAME_TYPES


def test_every_client_frame_type_has_exactly_one_handler_in_the_table():
    # given the frame types a client may send (protocol/inbound.py)
    # when the table is read
    handled = set(FRAME_HANDLERS)
    # then it handles each of them and nothing else
    assert handled == set(FRAME_TYPES)
