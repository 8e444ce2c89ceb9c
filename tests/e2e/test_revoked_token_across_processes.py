"""A token revoked in one OS process closes the sockets a Brain process holds for it: through
Redis (PostgreSQL + Redis, a real Brain and Celery worker), and, for a change that sends no
model signal (a bulk `update()`, SQL) or on the embedded runtime, whose channel layer is in
the Brain's memory, by the Brain looking at its sockets' tokens and users."""

from __future__ import annotations

import time
import urllib.error

import psycopg
import pytest
from django.contrib.auth import get_user_model
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from tests.e2e.brain import (
    Brain,
    CeleryWorker,
    bootstrap,
    brain_env,
    distributed_env,
    free_port,
    manage_shell,
    needs_services,
)
from tests.support.waiting import wait_until
from vancetope.tenancy.models import ApiToken, hash_token

FINGERPRINT = {"machineId": "revoked-machine", "workingDir": "/srv/revoked"}
# How long a socket may stay open after a change no signal announces: the Brain looks every
# VANCETOPE_REVOCATION_POLL_SECONDS (2 by default); the rest is room for a busy CI machine.
SILENT_REVOCATION_SECONDS = 10


def close_code(ws: ClientConnection) -> int | None:
    """The code the Brain closes the socket with (frames before it are skipped)."""
    try:
        while True:
            ws.recv(timeout=20)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None


@needs_services
def test_a_token_revoked_in_another_process_closes_the_brains_socket_with_4401(
    tmp_path,
    scratch_database,  # noqa: F811
):
    # given a distributed Brain holding a cli session on a socket opened with the token
    env, queue = distributed_env(tmp_path, scratch_database, "revoke")
    token = bootstrap(env)
    worker = CeleryWorker(env, queue)
    brain = Brain(env, free_port())
    try:
        client = brain.socket(token)
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        session_id = created["data"]["session"]["id"]
        # when the token is revoked from a separate OS process (a shell on the same database)
        code = (
            "from vancetope.tenancy.models import ApiToken, hash_token; "
            "from vancetope.tenancy.services import revoke_token; "
            f"revoke_token(ApiToken.objects.get(key_hash=hash_token({token!r})).pk)"
        )
        manage_shell(env, code)
        # then the Brain closes the socket as unauthenticated
        assert close_code(client.ws) == 4401
        # and the session follows its policy (cli: suspended); the token is refused over REST
        other = bootstrap(env)
        wait_until(
            lambda: brain.get(f"/api/sessions/{session_id}", other)["status"] == "SUSPENDED",
            timeout=30,
            interval=0.2,
        )
    finally:
        brain.stop()
        worker.stop()


def test_on_the_embedded_runtime_a_token_revoked_in_another_process_closes_the_socket_soon(
    tmp_path,
):
    # given the embedded Brain (in-memory channel layer) holding a socket opened with a token
    env = brain_env(tmp_path, VANCETOPE_REVOCATION_POLL_SECONDS="0.5")
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        client = brain.socket(token)
        client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        # when the token is revoked by a separate OS process (a shell on the same SQLite file)
        revoked_at = time.monotonic()
        manage_shell(
            env,
            "from vancetope.tenancy.models import ApiToken, hash_token; "
            "from vancetope.tenancy.services import revoke_token; "
            f"revoke_token(ApiToken.objects.get(key_hash=hash_token({token!r})).pk)",
        )
        # then the Brain closes the socket as unauthenticated within seconds
        assert close_code(client.ws) == 4401
        assert time.monotonic() - revoked_at < 15
    finally:
        code = brain.stop()
    assert code == 0, brain.log()


def refused_over_rest(brain: Brain, token: str) -> int:
    """The HTTP status a REST call with `token` gets (it must be an error)."""
    with pytest.raises(urllib.error.HTTPError) as refused:
        brain.get("/api/sessions", token)
    return refused.value.code


def refused_socket(brain: Brain, token: str) -> int | None:
    """The code a new socket opened with `token` is closed with."""
    return close_code(brain.socket(token).ws)


@needs_services
def test_a_token_revoked_by_a_bulk_update_closes_the_distributed_brains_socket_within_seconds(
    tmp_path,
    scratch_database,  # noqa: F811
):
    # given a distributed Brain (Redis channel layer) holding a socket opened with a token
    env, _ = distributed_env(tmp_path, scratch_database, "bulk-revoke")
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        client = brain.socket(token)
        assert client.request("thinkengines-list")["type"] == "thinkengines"
        # when the token is revoked by a bulk update in another OS process (no model signal)
        manage_shell(
            env,
            "from django.utils import timezone; "
            "from vancetope.tenancy.models import ApiToken, hash_token; "
            f"ApiToken.objects.filter(key_hash=hash_token({token!r}))"
            ".update(revoked_at=timezone.now())",
        )
        revoked_at = time.monotonic()
        # then the Brain closes the socket as unauthenticated within seconds
        assert close_code(client.ws) == 4401
        assert time.monotonic() - revoked_at < SILENT_REVOCATION_SECONDS
        # and the token opens no new socket and makes no REST call
        assert refused_socket(brain, token) == 4401
        assert refused_over_rest(brain, token) == 401
    finally:
        code = brain.stop()
    assert code == 0, brain.log()


@needs_services
def test_a_user_deactivated_in_sql_has_the_distributed_brains_socket_closed_within_seconds(
    tmp_path,
    scratch_database,  # noqa: F811
):
    # given a distributed Brain (Redis channel layer) holding a socket of a user's token
    env, _ = distributed_env(tmp_path, scratch_database, "sql-deactivate")
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        client = brain.socket(token)
        assert client.request("thinkengines-list")["type"] == "thinkengines"
        # when the user is deactivated by SQL on the database (as an identity sync would)
        users, tokens = get_user_model()._meta.db_table, ApiToken._meta.db_table
        with psycopg.connect(scratch_database, autocommit=True) as conn:
            conn.execute(
                f'UPDATE "{users}" SET is_active = false WHERE id = '
                f'(SELECT user_id FROM "{tokens}" WHERE key_hash = %s)',
                [hash_token(token)],
            )
        deactivated_at = time.monotonic()
        # then the Brain closes the socket as unauthenticated within seconds
        assert close_code(client.ws) == 4401
        assert time.monotonic() - deactivated_at < SILENT_REVOCATION_SECONDS
        # and the user's token opens no new socket and makes no REST call
        assert refused_socket(brain, token) == 4401
        assert refused_over_rest(brain, token) == 401
    finally:
        code = brain.stop()
    assert code == 0, brain.log()
