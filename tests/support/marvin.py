"""Helpers for marvin's tests: scripted-provider rules written from docs/engines.md's steps
(marvin `plan` through `plan_tasks`, `replan` through `replan_tasks`, `aggregate`; its workers
are frankie `act`, then `report` through `report_result`), and waiting for a tree."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import connection

from processes.actions import create
from processes.models import ProcessTransition, ThinkProcess
from processes.states import Status
from tests.support.tenancy import Tenancy, open_session


def plan(*tasks: dict[str, Any]) -> list[dict[str, Any]]:
    """A `plan_tasks` call of these tasks."""
    return [{"name": "plan_tasks", "arguments": {"tasks": list(tasks)}}]


def result(summary: str, **fields: Any) -> dict[str, Any]:
    """A worker's structured result of the default schema."""
    return {"summary": summary, "findings": [], "sources": [], "confidence": 0.9, **fields}


def worker(
    match: str, summary: str, *, delay: float = 0, times: int | None = None
) -> list[dict[str, Any]]:
    """The two rules of a marvin worker whose goal matches `match`: its `act` answers
    `summary` (after `delay` seconds), its `report` calls report_result with it; each fires
    `times` (default: always)."""
    once = {} if times is None else {"times": times}
    return [
        {
            "engine": "frankie",
            "step": "report",
            "match": match,
            "tool_calls": [{"name": "report_result", "arguments": result(summary)}],
            **once,
        },
        {
            "engine": "frankie",
            "step": "act",
            "match": match,
            "reply": summary,
            **({"delay": delay} if delay else {}),
            **once,
        },
    ]


def worker_reporting_in_act(match: str, summary: str) -> list[dict[str, Any]]:
    """The rule of a marvin worker whose goal matches `match` and that reports its result
    (`summary`) through report_result in its `act` step: one LLM call, no `report` step."""
    return [
        {
            "engine": "frankie",
            "step": "act",
            "match": match,
            "tool_calls": [{"name": "report_result", "arguments": result(summary)}],
        }
    ]


def marvin(tenancy: Tenancy, goal: str, **params: Any) -> ThinkProcess:
    return create.create_process(open_session(tenancy), goal=goal, engine="marvin", params=params)


def nodes(process: ThinkProcess) -> list[dict[str, Any]]:
    return list(process.engine_state["taskTree"]["nodes"])


def statuses(process_id: int) -> list[str]:
    """The statuses of the tree's nodes (none before its start has made the tree)."""
    state = ThinkProcess.objects.get(pk=process_id).engine_state
    return [n["status"] for n in state.get("taskTree", {}).get("nodes", [])]


def running_intervals(process_ids: list[int]) -> list[tuple[datetime, datetime]]:
    """Each process's first RUNNING interval, from its status history."""
    intervals = []
    for process_id in process_ids:
        moves = list(ProcessTransition.objects.filter(process_id=process_id).order_by("at", "pk"))
        start = next(i for i, move in enumerate(moves) if move.to_status == Status.RUNNING)
        end = next(m for m in moves[start + 1 :] if m.from_status == Status.RUNNING)
        intervals.append((moves[start].at, end.at))
    return intervals


def worker_env(queue: str, script: Path, var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a Celery worker on the test database, our queue and script."""
    database = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": (
            f"postgresql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
            f"{database['NAME']}"
        ),
        "VANCETOPE_TASK_QUEUE": queue,
        "VANCETOPE_LLM_SCRIPT": str(script),
        "VANCETOPE_WORKER": "celery",
        "VANCETOPE_VAR_DIR": str(var_dir),
        **extra,
    }
