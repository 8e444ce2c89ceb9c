"""A frame over the server's limit is answered with a close frame (1009), not a cut connection.

daphne serves WebSockets with autobahn, whose default on a message over its size limit (and on
a protocol violation) is to drop the TCP connection without a close frame (`failByDrop`): the
client sees the connection vanish, with no code saying why. The Brain promises 1009 for a frame
over what the server reads (README, VANCETOPE_MAX_FRAME_BYTES). daphne builds its autobahn
factory in `Server.run()` and passes no such option, so it is set on that factory once the
server listens (`ready_callable`), before any connection copies the factory's options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def when_ready(server: Any, step: Callable[[], None]) -> None:
    """Run `step` once `server` (a daphne Server, not yet run) listens, before the reactor
    takes a connection, then whatever was to run then before (daphne's `ready_callable`)."""
    earlier = server.ready_callable

    def ready() -> None:
        step()
        if earlier is not None:
            earlier()

    server.ready_callable = ready


def close_with_a_code(server: Any) -> None:
    """Make `server` (a daphne Server, not yet run) close failed WebSocket connections with a
    close frame and its code."""
    when_ready(server, lambda: server.ws_factory.setProtocolOptions(failByDrop=False))
