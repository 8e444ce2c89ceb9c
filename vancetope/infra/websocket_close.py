"""A frame over the server's limit is answered with a close frame (1009), not a cut connection.

daphne serves WebSockets with autobahn, whose default on a message over its size limit (and on
a protocol violation) is to drop the TCP connection without a close frame (`failByDrop`): the
client sees the connection vanish, with no code saying why. The Brain promises 1009 for a frame
over what the server reads (README, VANCETOPE_MAX_FRAME_BYTES). daphne builds its autobahn
factory in `Server.run()` and passes no such option, so it is set on that factory once the
server listens (`ready_callable`), before any connection copies the factory's options.

After its close frame, autobahn waits `closeHandshakeTimeout` (1 s by default) for the client's
and then aborts the TCP connection. A client still writing the rest of the frame that was too
big (or busy on a loaded machine) answers later than that, and the abort (a reset) can destroy
the close frame it had not yet read: it saw a reset, not 1009. The Brain waits as long as the
`websockets` library does by default before it gives up on a close (10 s).
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


# Seconds a client has to answer the Brain's close frame before its connection is aborted.
CLOSE_HANDSHAKE_SECONDS = 10


def close_with_a_code(server: Any) -> None:
    """Make `server` (a daphne Server, not yet run) close failed WebSocket connections with a
    close frame and its code, and give the client time to answer it."""
    when_ready(
        server,
        lambda: server.ws_factory.setProtocolOptions(
            failByDrop=False, closeHandshakeTimeout=CLOSE_HANDSHAKE_SECONDS
        ),
    )
