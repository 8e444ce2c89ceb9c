"""A socket closes (4401) once its token is revoked or its user deactivated, and its session
follows its disconnect policy; other tokens' sockets stay open. (On PostgreSQL + Redis the close
travels through Redis, as it would to another Brain process.) A change that sends no signal (a
bulk `update()`) closes them when the Brain next looks at its sockets' tokens and users."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.models import Session
from tests.support.ws import Client, bearer, connect, open_session
from vancetope.tenancy.models import ApiToken, hash_token
from vancetope.tenancy.revocation import close_revoked_held
from vancetope.tenancy.services import revoke_token

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def close_code(client: Client) -> int | None:
    """The code the Brain closes the socket with (events before it are skipped)."""
    while True:
        output: dict[str, Any] = await client.ws.receive_output(timeout=10)
        if output["type"] == "websocket.close":
            return output.get("code")


@database_sync_to_async
def token_of(raw: str) -> ApiToken:
    return ApiToken.objects.get(key_hash=hash_token(raw))


@database_sync_to_async
def second_token(tenancy) -> str:
    return ApiToken.issue(tenancy.user, name="second")[1]


@database_sync_to_async
def session_status(session_id: str) -> str:
    return Session.objects.get(pk=int(session_id.removeprefix("sess_"))).status


async def eventually_status(session_id: str, wanted: str) -> str:
    status = ""
    for _ in range(500):
        status = await session_status(session_id)
        if status == wanted:
            break
        await asyncio.sleep(0.02)
    return status


async def test_revoking_a_token_closes_its_sockets_with_4401_and_suspends_their_sessions(alice):
    # given two sockets of alice, one per token, each with a cli session
    revoked = await connect(bearer(alice))
    session_id = (await open_session(revoked, alice))["session"]["id"]
    other_raw = await second_token(alice)
    other = await connect([(b"authorization", f"Bearer {other_raw}".encode())])
    await open_session(other, alice)
    # when the first token is revoked
    token = await token_of(alice.token)
    await database_sync_to_async(revoke_token)(token.pk)
    # then its socket is closed as unauthenticated, and its session suspended
    assert await close_code(revoked) == 4401
    assert await eventually_status(session_id, "SUSPENDED") == "SUSPENDED"
    # and the socket of the other token still answers
    assert (await other.request("process-list"))["type"] == "process-list"


async def test_revoking_tokens_in_the_admin_closes_their_sockets(alice, operator):
    # given a socket opened with alice's token
    client = await connect(bearer(alice))
    await open_session(client, alice)
    token = await token_of(alice.token)
    # when an operator revokes the token with the admin's action
    response = await database_sync_to_async(operator.post)(
        "/admin/tenancy/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}
    )
    assert response.status_code == 302
    # then the socket is closed as unauthenticated
    assert await close_code(client) == 4401
    assert (await token_of(alice.token)).revoked_at is not None


async def test_deleting_a_token_in_the_admin_closes_its_sockets(alice, operator):
    client = await connect(bearer(alice))
    token = await token_of(alice.token)
    response = await database_sync_to_async(operator.post)(
        f"/admin/tenancy/apitoken/{token.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert await close_code(client) == 4401


async def test_deactivating_a_user_closes_every_socket_of_hers(alice):
    # given two sockets of alice with different tokens
    first = await connect(bearer(alice))
    session_id = (await open_session(first, alice))["session"]["id"]
    other_raw = await second_token(alice)
    second = await connect([(b"authorization", f"Bearer {other_raw}".encode())])

    # when her user is deactivated
    def deactivate() -> None:
        alice.user.is_active = False
        alice.user.save()

    await database_sync_to_async(deactivate)()
    # then both sockets close as unauthenticated and her session is suspended
    assert await close_code(first) == 4401
    assert await close_code(second) == 4401
    assert await eventually_status(session_id, "SUSPENDED") == "SUSPENDED"


async def test_a_revoked_token_opens_no_socket(alice):
    # given a revoked token
    token = await token_of(alice.token)
    await database_sync_to_async(revoke_token)(token.pk)
    # when a socket is opened with it, it is closed as unauthenticated at once
    client = await connect(bearer(alice))
    assert await close_code(client) == 4401


@database_sync_to_async
def brain_looks() -> int:
    """The Brain's periodic look at its sockets (watch_revocations does it every
    VANCETOPE_REVOCATION_POLL_SECONDS); how many statements it took."""
    with CaptureQueriesContext(connection) as statements:
        close_revoked_held()
    return len(statements)


async def test_a_token_revoked_by_a_bulk_update_closes_its_sockets_when_the_brain_looks(alice):
    # given three sockets of alice: two with one token, one with another
    revoked = [await connect(bearer(alice)), await connect(bearer(alice))]
    other_raw = await second_token(alice)
    other = await connect([(b"authorization", f"Bearer {other_raw}".encode())])
    # when the first token is revoked by a bulk update, which sends no signal
    token = await token_of(alice.token)
    revoke = ApiToken.objects.filter(pk=token.pk).update
    await database_sync_to_async(revoke)(revoked_at=timezone.now())
    # and the Brain looks at its sockets
    statements = await brain_looks()
    # then that token's sockets are closed as unauthenticated, found with one statement
    assert [await close_code(client) for client in revoked] == [4401, 4401]
    assert statements == 1
    # and the socket of the other token still answers
    assert (await other.request("process-list"))["type"] == "process-list"


async def test_a_user_deactivated_by_a_bulk_update_has_her_sockets_closed_when_the_brain_looks(
    alice, bob
):
    # given a socket of alice and one of bob
    hers, his = await connect(bearer(alice)), await connect(bearer(bob))
    # when alice is deactivated by a bulk update, which sends no signal
    deactivate = get_user_model().objects.filter(pk=alice.user.pk).update
    await database_sync_to_async(deactivate)(is_active=False)
    # and the Brain looks at its sockets
    statements = await brain_looks()
    # then her socket is closed as unauthenticated, found with one statement
    assert await close_code(hers) == 4401
    assert statements == 1
    # and bob's socket still answers
    assert (await his.request("process-list"))["type"] == "process-list"
