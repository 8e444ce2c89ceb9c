"""vancetope/infra/websocket_session.py: a socket of the web UI is still its session cookie's
user, with its frames sent past channels' session wrapper."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.sessions import InstanceSessionWrapper
from django.test import Client as HttpClient

from sessions_app.models import Session
from tests.support.tenancy import Tenancy
from tests.support.ws import connect, open_session

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def cookie_of(tenancy: Tenancy) -> str:
    browser = HttpClient()
    browser.force_login(tenancy.user)
    return browser.cookies["sessionid"].value


@database_sync_to_async
def owner_of(session_id: str) -> str:
    return Session.objects.get(pk=int(session_id.removeprefix("sess_"))).owner.username


async def test_a_socket_with_the_session_cookie_acts_as_its_user_without_the_send_wrapper(
    alice: Tenancy, monkeypatch
) -> None:
    # given a browser logged in as alice; channels' wrapper made to fail if a frame reaches it
    cookie = await cookie_of(alice)

    async def wrapped_send(self: InstanceSessionWrapper, message: dict) -> None:
        raise AssertionError(f"a {message['type']} went through the session wrapper")

    monkeypatch.setattr(InstanceSessionWrapper, "send", wrapped_send)
    # when its socket opens a session with the cookie alone
    client = await connect([(b"cookie", f"sessionid={cookie}".encode())])
    data = await open_session(client, alice)
    # then the session is alice's, and the reply came out past the wrapper
    assert await owner_of(data["session"]["id"]) == alice.user.username
    await client.ws.disconnect()
