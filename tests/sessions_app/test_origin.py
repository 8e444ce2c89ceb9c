"""The WebSocket's Origin check: the Brain's own origin (host and port) or a trusted one only."""

from __future__ import annotations

import pytest
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from gateway.auth import TokenAuthMiddleware, origin_validator
from gateway.routing import websocket_urlpatterns
from vancetope.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def connects(alice, origin: str | None, host: str = "127.0.0.1:8000") -> bool:
    headers = [(b"authorization", f"Bearer {alice.token}".encode()), (b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    communicator = WebsocketCommunicator(application, "/ws/brain/", headers=headers)
    connected, _ = await communicator.connect()
    if connected:
        await communicator.disconnect()
    return connected


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000"),
        ("http://localhost:8000", "localhost:8000"),
        ("http://localhost", "localhost"),
        ("http://[::1]:8000", "[::1]:8000"),
    ],
)
async def test_the_brains_own_origin_is_accepted(alice, origin, host):
    assert await connects(alice, origin, host)


async def test_no_origin_is_accepted_for_token_clients(alice):
    assert await connects(alice, None)


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        # another port of the same host is another site (another local web app)
        ("http://127.0.0.1:6666", "127.0.0.1:8000"),
        ("http://localhost:3000", "localhost:8000"),
        # another host, even one in ALLOWED_HOSTS, than the socket was opened on
        ("http://localhost:8000", "127.0.0.1:8000"),
        ("https://127.0.0.1:8000", "127.0.0.1:8000"),
        ("https://evil.example", "127.0.0.1:8000"),
        ("null", "127.0.0.1:8000"),
        # a Host header outside ALLOWED_HOSTS, matching its origin
        ("http://evil.example:8000", "evil.example:8000"),
    ],
)
async def test_any_other_origin_is_refused(alice, origin, host):
    assert not await connects(alice, origin, host)


async def test_an_origin_of_csrf_trusted_origins_is_accepted(alice, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://brain.example.org"]
    # the validator reads the settings when the application is built
    app = origin_validator(
        AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))
    )
    headers = [
        (b"authorization", f"Bearer {alice.token}".encode()),
        (b"host", b"127.0.0.1:8000"),
        (b"origin", b"https://brain.example.org"),
    ]
    communicator = WebsocketCommunicator(app, "/ws/brain/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    await communicator.disconnect()
    other = [*headers[:2], (b"origin", b"https://brain.example.org:444")]
    refused = WebsocketCommunicator(app, "/ws/brain/", headers=other)
    assert not (await refused.connect())[0]
