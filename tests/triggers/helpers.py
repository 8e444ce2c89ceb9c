"""Shared pieces of the triggers tests: a workflow body, its creation, waiting for a run."""

from __future__ import annotations

from typing import Any

from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until
from triggers.models import RunLog, RunStatus

REVIEW: dict[str, Any] = {
    "name": "review",
    "description": "Reviews a topic",
    "goal": "Review ${input.topic}",
    "inputs": ["topic"],
    "tasks": [
        {"kind": "WORKER", "title": "Sources", "goal": "find sources on ${input.topic}"},
        {"kind": "AGGREGATE", "title": "Report", "goal": "write the review"},
    ],
}


def create_workflow(tenancy: Tenancy, body: dict[str, Any] | None = None) -> str:
    response = tenancy.api().post("/api/workflows", body or REVIEW, format="json")
    assert response.status_code == 201, response.json()
    return str(response.json()["id"])


def finished_run(run_id: str, timeout: float = 20) -> RunLog:
    pk = int(run_id.removeprefix("run_"))

    def check() -> RunLog | None:
        run = RunLog.objects.get(pk=pk)
        return run if run.status != RunStatus.RUNNING else None

    found = wait_until(check, timeout=timeout)
    assert found is not None
    return found
