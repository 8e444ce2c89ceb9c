"""The daphne server's WebSocket factory, once it listens, closes a failed connection with a
close frame and gives the client time to answer it before aborting the TCP connection."""

from __future__ import annotations

from types import SimpleNamespace

from autobahn.twisted.websocket import WebSocketServerFactory

from vancetope.infra.websocket_close import CLOSE_HANDSHAKE_SECONDS, close_with_a_code


def test_once_the_server_listens_failed_sockets_close_with_a_code_and_wait_for_the_client():
    factory = WebSocketServerFactory()
    earlier: list[str] = []
    server = SimpleNamespace(ws_factory=factory, ready_callable=lambda: earlier.append("ran"))
    close_with_a_code(server)
    # nothing changes before the server listens
    assert factory.failByDrop is True
    assert factory.closeHandshakeTimeout == 1
    # when it listens
    server.ready_callable()
    # then: a close frame, not a dropped connection, and 10 s for the client's answer
    assert factory.failByDrop is False
    assert factory.closeHandshakeTimeout == CLOSE_HANDSHAKE_SECONDS == 10
    assert earlier == ["ran"]  # what daphne was to run then still runs
