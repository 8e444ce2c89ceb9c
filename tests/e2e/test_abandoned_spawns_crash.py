"""A Brain killed (SIGKILL) after a chat turn spawned a child but before that turn committed:
after the restart the retried turn makes the only child, which starts; none waits in INIT for
ever and one message never makes two trees (a real `manage.py brain`)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port, poll

FINGERPRINT = {"machineId": "e2e-machine", "workingDir": "/srv/e2e"}
CREATE = {"name": "process_create", "arguments": {"recipe": "ford", "goal": "count the rings"}}


def script(reply_delay: float) -> list[dict[str, Any]]:
    return [
        {"engine": "arthur", "match": "^rings$", "times": 1, "tool_calls": [CREATE]},
        {"engine": "arthur", "match": "^rings$", "reply": "I started it.", "delay": reply_delay},
        {"engine": "ford", "reply": "seven"},
        {"engine": "arthur", "reply": "Noted."},
    ]


@pytest.mark.crash
def test_a_child_spawned_by_a_turn_killed_before_its_commit_does_not_outlive_it(
    tmp_path: Path,
) -> None:
    # given a chat turn that spawns a ford child, then answers slowly
    rules = tmp_path / "script.yaml"
    rules.write_text(yaml.safe_dump(script(reply_delay=60)))
    env = brain_env(tmp_path, VANCETOPE_LLM_SCRIPT=str(rules), VANCETOPE_LEASE_SECONDS="3")
    token = bootstrap(env)
    port = free_port()
    brain = Brain(env, port)

    def fords() -> list[dict[str, Any]]:
        return list(brain.get("/api/processes?engine=ford", token)["results"])

    try:
        client = brain.socket(token)
        created = client.request(
            "session-create",
            {
                "clientType": "cli",
                "projectId": "proj_default",
                "fingerprint": FINGERPRINT,
                "onDisconnect": "KEEP_OPEN",
            },
        )
        chat_id = created["data"]["session"]["chatProcessId"]
        client.request("chat", {"text": "rings"})
        # the child is a row (INIT) while its turn still streams
        poll(lambda: [p["status"] for p in fords()] == ["INIT"], timeout=30)
        client.close()
    finally:
        # when the Brain dies before the turn commits
        brain.process.send_signal(signal.SIGKILL)
        brain.process.wait(timeout=10)
    rules.write_text(yaml.safe_dump(script(reply_delay=0)))

    brain = Brain(env, port)
    try:
        # then after the restart the retried turn answers once
        def answered() -> list[dict[str, Any]]:
            detail = brain.get(f"/api/processes/{chat_id}", token)
            return [m for m in detail["conversation"] if m["role"] == "assistant"]

        poll(answered, timeout=60)
        # and exactly one child exists, the committed turn's, and it started
        children = poll(lambda: [p for p in fords() if p["status"] != "INIT"], timeout=30)
        assert len(children) == 1
        assert len(fords()) == 1
    finally:
        code = brain.stop()
    assert code == 0, brain.log()
