"""A token revoked in one OS process closes the sockets a Brain process holds for it: through
Redis (PostgreSQL + Redis, a real Brain and Celery worker), and on the embedded runtime, whose
channel layer is in the Brain's memory, by the Brain looking at its sockets' tokens."""

from __future__ import annotations

import time

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

FINGERPRINT = {"machineId": "revoked-machine", "workingDir": "/srv/revoked"}


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
