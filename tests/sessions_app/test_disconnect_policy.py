"""Every kind of close applies the session's disconnect policy: the client closing, the client
vanishing, and the socket's application failing under it (a channel layer that cannot reach
Redis, which the server answers with a 1011 close)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from sessions_app.models import Session
from tests.support.ws import bearer, connect, open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@database_sync_to_async
def status_of(session_id: str) -> str:
    return Session.objects.get(pk=int(session_id.removeprefix("sess_"))).status


async def wait_for_status(session_id: str, wanted: str) -> str:
    status = ""
    for _ in range(500):
        status = await status_of(session_id)
        if status == wanted:
            break
        await asyncio.sleep(0.02)
    return status


@pytest.fixture
def broken_layer(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Once the returned event is set, every socket's channel-layer receive fails as a layer
    fails when Redis stops answering."""
    layer: Any = get_channel_layer()
    broken = asyncio.Event()
    receive = layer.receive

    async def failing_receive(channel: str) -> dict[str, Any]:
        waiting = asyncio.ensure_future(receive(channel))
        breaking = asyncio.ensure_future(broken.wait())
        done, _ = await asyncio.wait({waiting, breaking}, return_when=asyncio.FIRST_COMPLETED)
        if waiting in done:
            breaking.cancel()
            return await waiting
        waiting.cancel()
        raise TimeoutError("Timeout reading from 127.0.0.1:6379")

    monkeypatch.setattr(layer, "receive", failing_receive)
    return broken


async def test_a_socket_whose_channel_layer_fails_still_suspends_its_cli_session(
    alice, broken_layer
):
    # given a cli session (policy SUSPEND) on a socket
    client = await connect(bearer(alice))
    session_id = (await open_session(client, alice))["session"]["id"]
    # when the channel layer fails under the socket, ending its application
    broken_layer.set()
    # then the session is suspended all the same
    assert await wait_for_status(session_id, "SUSPENDED") == "SUSPENDED"


async def test_a_socket_whose_channel_layer_fails_still_closes_its_system_session(
    alice, broken_layer
):
    # given a session with onDisconnect CLOSE
    client = await connect(bearer(alice))
    session_id = (await open_session(client, alice, onDisconnect="CLOSE"))["session"]["id"]
    # when the channel layer fails under the socket
    broken_layer.set()
    # then the session is closed
    assert await wait_for_status(session_id, "CLOSED") == "CLOSED"


async def test_a_client_that_closes_suspends_its_session_once(alice):
    # given a cli session
    client = await connect(bearer(alice))
    session_id = (await open_session(client, alice))["session"]["id"]
    # when the client closes the socket
    await client.ws.disconnect()
    # then the session is suspended
    assert await wait_for_status(session_id, "SUSPENDED") == "SUSPENDED"


async def test_a_socket_bound_to_another_session_applies_the_earlier_ones_policy(alice):
    # given a socket that opened a session closing on disconnect, then a suspending one
    client = await connect(bearer(alice))
    first = (await open_session(client, alice, onDisconnect="CLOSE"))["session"]["id"]
    second = (await open_session(client, alice))["session"]["id"]
    # when the socket was re-bound to the second and then disconnects
    await client.ws.disconnect()
    # then the first session's policy ran too (CLOSED), and the second's (SUSPENDED)
    assert await wait_for_status(first, "CLOSED") == "CLOSED"
    assert await wait_for_status(second, "SUSPENDED") == "SUSPENDED"


async def test_a_session_the_socket_leaves_for_another_follows_its_policy_at_once(alice):
    # given a cli session (policy SUSPEND) on a socket
    client = await connect(bearer(alice))
    first = (await open_session(client, alice))["session"]["id"]
    # when the same socket creates another session
    await open_session(client, alice)
    # then the first no longer has a client: it is suspended while the socket stays open
    assert await wait_for_status(first, "SUSPENDED") == "SUSPENDED"
    assert (await client.request("process-list"))["type"] == "process-list"
