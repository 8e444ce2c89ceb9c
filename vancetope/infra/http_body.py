"""A request's body goes to the application as it came, not through Twisted's form parser.

daphne serves HTTP with Twisted's `http.Request`, which parses every POST body sent as
`multipart/form-data` or `application/x-www-form-urlencoded` into `request.args` before daphne
hands the request to Django, although daphne never reads those args. On a multipart body
Twisted cannot parse (one with no parts, `--boundary--`), it answers `400 Bad Request` itself,
with no headers and no body, and drops the connection: the client never got the JSON 400
naming the field that Django's answer carried. And every upload is parsed twice. Twisted's
`Request` takes `parsePOSTFormSubmission=False` for exactly this; daphne builds its requests
without it, so each HTTP connection daphne builds gets a request class that passes it.
"""

from __future__ import annotations

from typing import Any

from daphne.http_protocol import WebRequest

from vancetope.infra.websocket_close import when_ready


class WholeBodyRequest(WebRequest):
    """daphne's request, with Twisted's POST form parsing off (the body stays in `content`
    for daphne to send on as it came)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)


def keep_bodies_whole(server: Any) -> None:
    """Make `server` (a daphne Server, not yet run) build its HTTP connections' requests as
    WholeBodyRequest."""

    def wrap_the_factory() -> None:
        factory = server.http_factory
        build = factory.buildProtocol

        def build_protocol(address: Any) -> Any:
            protocol = build(address)
            if protocol is not None:
                protocol.requestFactory = WholeBodyRequest
            return protocol

        factory.buildProtocol = build_protocol

    when_ready(server, wrap_the_factory)
