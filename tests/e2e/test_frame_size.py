"""Frames over VANCETOPE_MAX_FRAME_BYTES against a real Brain process and a real WebSocket
client: a 413 on an open socket, whose session stays open; a raised limit takes larger frames."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port

pytestmark = pytest.mark.embedded_brain

FINGERPRINT = {"machineId": "frame-machine", "workingDir": "/srv/frames"}
FRAME_TEXT = "x" * (1024 * 1024 + 512 * 1024)  # 1.5 MiB


def open_socket(brain: Brain, token: str) -> ClientConnection:
    return connect(
        f"ws://127.0.0.1:{brain.port}/ws/brain/",
        additional_headers={"Authorization": f"Bearer {token}"},
        open_timeout=10,
        max_size=None,
    )


def reply(ws: ClientConnection, request_id: str | None) -> dict[str, Any]:
    while True:
        frame = json.loads(ws.recv(timeout=30))
        if frame.get("type") != "event" and frame.get("replyTo") == request_id:
            return dict(frame)


def send(ws: ClientConnection, kind: str, request_id: str, data: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps({"type": kind, "id": request_id, "data": data}))
    return reply(ws, request_id)


def create_session(ws: ClientConnection) -> str:
    data = {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT}
    created = send(ws, "session-create", "c", data)
    assert created["type"] == "session-created", created
    return str(created["data"]["session"]["id"])


def test_a_frame_over_the_limit_is_a_413_and_the_socket_and_session_stay_open(tmp_path: Path):
    # given a Brain on the default limit (1 MiB) and a cli session on a socket
    env = brain_env(tmp_path)
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        with open_socket(brain, token) as ws:
            session_id = create_session(ws)
            # when the client sends a 1.5 MiB chat frame
            ws.send(json.dumps({"type": "chat", "id": "big", "data": {"text": FRAME_TEXT}}))
            # then it is refused with a 413 naming the limit (unread, so without its id)
            refused = reply(ws, None)
            assert refused["type"] == "error", refused
            assert refused["data"]["code"] == 413
            assert str(1024 * 1024) in refused["data"]["message"]
            # and the same socket chats on, its session still open
            assert send(ws, "chat", "small", {"text": "hello"})["type"] == "chat-accepted"
            assert brain.get(f"/api/sessions/{session_id}", token)["status"] == "OPEN"
    finally:
        assert brain.stop() == 0, brain.log()


def test_a_raised_limit_lets_the_server_take_larger_frames(tmp_path: Path):
    # given a Brain whose limit is raised to 4 MiB
    env = brain_env(tmp_path, VANCETOPE_MAX_FRAME_BYTES=str(4 * 1024 * 1024))
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        with open_socket(brain, token) as ws:
            create_session(ws)
            # when the client sends a 1.5 MiB chat frame
            accepted = send(ws, "chat", "big", {"text": FRAME_TEXT})
            # then it is accepted
            assert accepted["type"] == "chat-accepted", accepted
    finally:
        assert brain.stop() == 0, brain.log()


def read_until_closed(ws: ClientConnection) -> None:
    """Read (the session's events) until the connection ends: ConnectionClosed."""
    while True:
        ws.recv(timeout=30)


def test_a_frame_over_what_the_server_reads_is_closed_with_1009(tmp_path: Path):
    # given a Brain on the default limit: the server reads frames up to 16 MiB
    env = brain_env(tmp_path)
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        with open_socket(brain, token) as ws:
            create_session(ws)
            # when the client sends a 17 MiB frame
            ws.send(json.dumps({"type": "chat", "data": {"text": "x" * (17 * 1024 * 1024)}}))
            # then the server closes the connection with 1009 (message too big), not a cut
            with pytest.raises(ConnectionClosed) as closed:
                read_until_closed(ws)
            assert closed.value.rcvd is not None, "the connection was dropped without a close"
            assert closed.value.rcvd.code == 1009
    finally:
        assert brain.stop() == 0, brain.log()
