"""The results of runs a person started reach them: a workflow run over REST runs in a
`_system` session, and its owner reads its processes (REST and WebSocket; stop is a 409 saying
why, not a 404), and a finished run posts its result as an OUTPUT_TEXT inbox item with a
"finished" notification. Before, the owner got 404 for the run's process, no item and no
notification; the report lived only in the admin's engine state.

A real `manage.py brain` over HTTP and WebSocket (the whole ASGI stack)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port, poll
from tests.support.marvin import worker

pytestmark = pytest.mark.embedded_brain

FINGERPRINT = {"machineId": "runs-machine", "workingDir": "/srv/runs"}
WORKFLOW = {
    "name": "review",
    "goal": "Review ${input.topic}",
    "inputs": ["topic"],
    "tasks": [
        {"kind": "WORKER", "title": "Sources", "goal": "find sources on ${input.topic}"},
        {"kind": "AGGREGATE", "title": "Report", "goal": "write the review"},
    ],
}
SCRIPT = [
    *worker("find sources", "Three tide tables."),
    {"engine": "marvin", "step": "aggregate", "reply": "Tides: three tables agree."},
]


def test_the_owner_of_a_run_reads_its_processes_and_gets_its_result(tmp_path: Path) -> None:
    # given a workflow, run over REST by its owner
    rules = tmp_path / "script.yaml"
    rules.write_text(yaml.safe_dump(SCRIPT))
    env = brain_env(tmp_path, VANCETOPE_LLM_SCRIPT=str(rules))
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        status, workflow = brain.post("/api/workflows", token, WORKFLOW)
        assert status == 201, workflow
        status, started = brain.post(
            f"/api/workflows/{workflow['id']}/run", token, {"input": {"topic": "tides"}}
        )
        assert status == 201, started
        process_id, run_id = started["process"]["id"], started["runId"]
        # when the run finishes
        run = poll(
            lambda: (r := brain.get(f"/api/runs/{run_id}", token))["status"] == "completed" and r,
            timeout=60,
        )
        # then its owner reads its process and its worker, over REST and the WebSocket
        detail = brain.get(f"/api/processes/{process_id}", token)
        assert (detail["status"], detail["closeReason"]) == ("CLOSED", "DONE")
        worker_id = detail["taskTree"]["nodes"][1]["processId"]
        assert brain.get(f"/api/processes/{worker_id}", token)["parentId"] == process_id
        listed = [p["id"] for p in brain.get("/api/processes?engine=marvin", token)["results"]]
        assert process_id in listed
        client = brain.socket(token)
        client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        got = client.request("process-get", {"processId": process_id})
        assert got["type"] == "process", got
        # and changing it is a 409 saying why, not a 404
        refused = client.request("process-stop", {"processId": process_id})
        assert refused["data"]["code"] == 409, refused
        assert "system run" in refused["data"]["message"]
        status, answer = brain.post(f"/api/processes/{worker_id}/stop", token)
        assert status == 409, answer
        client.close()
        # and the result is an OUTPUT_TEXT item of the run's process, with a notification
        items = brain.get("/api/inbox?status=OPEN", token)["results"]
        [result] = [i for i in items if i["kind"] == "OUTPUT_TEXT"]
        assert result["originProcessId"] == process_id
        assert run_id in result["title"]
        assert result["body"].strip()
        notes = brain.get("/api/notifications", token)["results"]
        assert any(result["id"] in n["text"] and run_id in n["text"] for n in notes), notes
        assert len(run["notificationsSent"]) >= 1
    finally:
        code = brain.stop()
    assert code == 0, brain.log()
