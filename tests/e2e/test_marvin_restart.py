"""A marvin tree survives the Brain being killed between two of its nodes: after the restart the
finished node is not run again and the tree completes (a real `manage.py brain`, SIGKILL)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port

FINGERPRINT = {"machineId": "e2e-machine", "workingDir": "/srv/e2e"}
SCRIPT = [
    {
        "engine": "marvin",
        "step": "plan",
        "tool_calls": [
            {
                "name": "plan_tasks",
                "arguments": {
                    "tasks": [
                        {"kind": "WORKER", "title": "First", "goal": "the first task"},
                        {"kind": "WORKER", "title": "Second", "goal": "the second task"},
                        {"kind": "AGGREGATE", "title": "Report"},
                    ]
                },
            }
        ],
    },
    {"engine": "frankie", "match": "the first task", "reply": "first done"},
    # Slow, so that the Brain is killed while the second worker runs.
    {"engine": "frankie", "match": "the second task", "reply": "second done", "delay": 3},
    {"engine": "marvin", "step": "aggregate", "reply": "both done"},
]


def poll(check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"not reached within {timeout}s")


def kill(brain: Brain) -> None:
    brain.process.send_signal(signal.SIGKILL)
    brain.process.wait(timeout=10)


@pytest.mark.crash
def test_a_marvin_tree_killed_between_nodes_finishes_without_running_a_node_twice(
    tmp_path: Path,
):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    # Short leases: the dead Brain's lanes are free again soon after the restart.
    env = brain_env(tmp_path, VANCETOPE_LLM_SCRIPT=str(script), VANCETOPE_LEASE_SECONDS="3")
    token = bootstrap(env)
    port = free_port()
    brain = Brain(env, port)
    try:
        client = brain.socket(token)
        # The session keeps its processes running when its client leaves: this is about
        # the Brain dying, not about the client's policy.
        client.request(
            "session-create",
            {
                "clientType": "cli",
                "projectId": "proj_default",
                "fingerprint": FINGERPRINT,
                "onDisconnect": "KEEP_OPEN",
            },
        )
        created = client.request("process-create", {"recipe": "deep-think", "goal": "two tasks"})
        marvin_id = created["data"]["process"]["id"]

        def nodes() -> list[dict[str, Any]]:
            detail = brain.get(f"/api/processes/{marvin_id}", token)
            return list((detail.get("taskTree") or {}).get("nodes", []))

        # given the first worker's node finished and the second worker running
        poll(lambda: [n["status"] for n in nodes()][1:3] == ["DONE", "RUNNING"], timeout=30)
        client.close()
    finally:
        # when the Brain dies there and then
        kill(brain)

    brain = Brain(env, port)
    try:
        # then after the restart the tree completes
        done = poll(
            lambda: (
                (d := brain.get(f"/api/processes/{marvin_id}", token))["status"] == "CLOSED" and d
            ),
            timeout=60,
        )
        assert done["closeReason"] == "DONE", done
        tree = done["taskTree"]["nodes"]
        assert [n["status"] for n in tree] == ["DONE", "DONE", "DONE", "DONE"]
        # and the first worker ran once: one process per worker node, one answer each
        listed = brain.get("/api/processes?engine=frankie", token)["results"]
        assert sorted(p["id"] for p in listed) == sorted(n["processId"] for n in tree[1:3])
        for worker in listed:
            detail = brain.get(f"/api/processes/{worker['id']}", token)
            answers = [m for m in detail["conversation"] if m["role"] == "assistant"]
            assert len(answers) == 1, detail["conversation"]
        assert not done.get("lastError")
    finally:
        code = brain.stop()
    assert code == 0, brain.log()
