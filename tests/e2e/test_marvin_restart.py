"""A marvin tree survives the Brain being killed while three of its workers run at once: after
the restart the finished node is not run again, each running worker finishes its task once, and
the tree completes (a real `manage.py brain`, SIGKILL)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port, poll
from tests.support.marvin import plan, worker

FINGERPRINT = {"machineId": "e2e-machine", "workingDir": "/srv/e2e"}
SLOW = ("the second task", "the third task", "the fourth task")
SCRIPT = [
    {
        "engine": "marvin",
        "step": "plan",
        "tool_calls": plan(
            {"kind": "WORKER", "title": "First", "goal": "the first task"},
            *({"kind": "WORKER", "title": goal, "goal": goal} for goal in SLOW),
            {"kind": "AGGREGATE", "title": "Report"},
        ),
    },
    *worker("the first task", "first done"),
    # Slow, so that the Brain is killed while these three workers run side by side.
    *(rule for goal in SLOW for rule in worker(goal, f"{goal} done", delay=3)),
    {"engine": "marvin", "step": "aggregate", "reply": "all done"},
]


def kill(brain: Brain) -> None:
    brain.process.send_signal(signal.SIGKILL)
    brain.process.wait(timeout=10)


@pytest.mark.crash
def test_a_marvin_tree_killed_while_three_workers_run_finishes_running_each_once(
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

        # given the first worker's node finished and the three others running at once, each
        # in its worker's lane
        running = ["DONE", "RUNNING", "RUNNING", "RUNNING"]
        poll(lambda: [n["status"] for n in nodes()][1:5] == running, timeout=30)

        def working() -> bool:
            listed = brain.get("/api/processes?engine=frankie&status=RUNNING", token)
            return len(listed["results"]) == 3

        poll(working, timeout=30)
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
        assert [n["status"] for n in tree] == ["DONE"] * 6
        # and each worker ran once: one process per worker node, one answer each
        listed = brain.get("/api/processes?engine=frankie", token)["results"]
        assert sorted(p["id"] for p in listed) == sorted(n["processId"] for n in tree[1:5])
        assert [n["result"]["summary"] for n in tree[1:5]] == [
            "first done",
            *(f"{goal} done" for goal in SLOW),
        ]
        for worker in listed:
            detail = brain.get(f"/api/processes/{worker['id']}", token)
            answers = [m for m in detail["conversation"] if m["role"] == "assistant"]
            assert len(answers) == 1, detail["conversation"]
        assert not done.get("lastError")
    finally:
        code = brain.stop()
    assert code == 0, brain.log()
