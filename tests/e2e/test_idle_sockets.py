"""Idle sockets on the distributed runtime: a real Brain and Celery worker on PostgreSQL + Redis,
fifty sockets that open a session and then say nothing for a minute."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.e2e.brain import (
    Brain,
    CeleryWorker,
    bootstrap,
    distributed_env,
    free_port,
    needs_services,
)
from tests.support.waiting import wait_until

SOCKETS = 50
IDLE_SECONDS = 60
FINGERPRINT = {"machineId": "idle-machine", "workingDir": "/srv/idle"}


async def _reply(ws: ClientConnection, request_id: str) -> dict[str, Any]:
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
        if frame.get("replyTo") == request_id:
            return dict(frame)


async def _open_session(port: int, token: str) -> tuple[ClientConnection, str]:
    ws = await connect(
        f"ws://127.0.0.1:{port}/ws/brain/",
        additional_headers={"Authorization": f"Bearer {token}"},
        open_timeout=20,
        # The client sends no pings: the socket is idle on the wire as well.
        ping_interval=None,
    )
    data = {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT}
    await ws.send(json.dumps({"type": "session-create", "id": "c", "data": data}))
    created = await _reply(ws, "c")
    assert created["type"] == "session-created", created
    return ws, created["data"]["session"]["id"]


async def _idle_sockets(port: int, token: str) -> tuple[list[Any], list[str], list[str]]:
    """Open the sockets, leave them idle, then ask each one something; the close codes of
    those the Brain closed meanwhile, the session ids, and the replies' types."""
    opened = [await _open_session(port, token) for _ in range(SOCKETS)]
    await asyncio.sleep(IDLE_SECONDS)
    closed = [ws.close_code for ws, _ in opened if ws.close_code is not None]
    replies = []
    for ws, _ in opened:
        if ws.close_code is None:
            await ws.send(json.dumps({"type": "thinkengines-list", "id": "t", "data": {}}))
            replies.append((await _reply(ws, "t"))["type"])
    for ws, _ in opened:
        await ws.close()
    return closed, [session for _, session in opened], replies


# The minute of silence, the Brain's and the worker's start and the wait for fifty suspensions:
# 107 s alone beside a CI run (18 s of it the scratch database's setup), over the suite's
# 120 s when it ran at the start of .ci/run, with every lane migrating its databases.
@pytest.mark.timeout(IDLE_SECONDS + 240)
@needs_services
def test_fifty_idle_sockets_stay_open_for_a_minute_and_suspend_their_sessions_on_close(
    tmp_path,
    scratch_database,  # noqa: F811
):
    # given a distributed Brain and worker on PostgreSQL + Redis
    env, queue = distributed_env(tmp_path, scratch_database, "idle")
    token = bootstrap(env)
    worker = CeleryWorker(env, queue)
    brain = Brain(env, free_port())
    try:
        # when fifty cli sockets open a session each and then stay silent for a minute
        started = time.monotonic()
        closed, sessions, replies = asyncio.run(_idle_sockets(brain.port, token))
        assert time.monotonic() - started >= IDLE_SECONDS

        # then the Brain closed none of them, and each still answers
        assert closed == []
        assert replies == ["thinkengines"] * SOCKETS

        # and when the clients close them, every session follows its policy (cli: SUSPEND)
        def statuses() -> list[str]:
            return [brain.get(f"/api/sessions/{sid}", token)["status"] for sid in sessions]

        wait_until(lambda: set(statuses()) == {"SUSPENDED"}, timeout=60, interval=0.5)
    finally:
        brain.stop()
        worker.stop()
    assert "Traceback" not in brain.log(), brain.log()
    assert "ended without a disconnect" not in brain.log(), brain.log()
