"""Bounded continuations: a process resumed for at most so many turns and tokens (a cron
job's `process_continue`, PROTOCOL.md "Cron job"), then put back in the status it was found in.

The quota lives on the process row (`run_quota`), written with the resume that starts it
(processes/actions/lifecycle.py) and counted by each turn's commit (processes/lane/commit.py),
so a lane that dies mid-continuation resumes within what is left. An empty quota (every other
process) costs a turn one dict test.

    {"runId": "run_12", "found": "PAUSED", "maxTasks": 3, "maxTokens": 0,
     "stopOnApproval": false, "startedAt": "…", "tasks": 2, "tokens": 90, "llmCalls": 2,
     "ended": ""}

`ended` names why the continuation is over ("maxTasks", "maxTokens", "no more work", a stop
check's reason, or the status the process came to rest in); a quota with `ended` set is a
record of the last continuation and bounds nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from processes.models import ThinkProcess
from processes.states import Call, Status

log = logging.getLogger(__name__)

# Statuses a continuation may start from, and the call that puts a process back in each.
RESTING: dict[str, tuple[Call, Status]] = {
    Status.PAUSED: (Call.PAUSE, Status.PAUSED),
    Status.SUSPENDED: (Call.SUSPEND, Status.SUSPENDED),
    Status.IDLE: (Call.TURN_END, Status.IDLE),
}

# Checked after each counted turn: a reason to stop now, or None. Other apps register here in
# their AppConfig.ready (triggers/ stops on a posted APPROVAL item), so processes/ imports none
# of them; they run only for a process with an active quota.
StopCheck = Callable[[ThinkProcess, dict[str, Any]], str | None]
_stop_checks: list[StopCheck] = []


def on_quota_turn(check: StopCheck) -> None:
    if check not in _stop_checks:
        _stop_checks.append(check)


def new_quota(
    run_id: str,
    found: str,
    *,
    max_tasks: int,
    max_tokens: int,
    stop_on_approval: bool,
    started_at: str,
) -> dict[str, Any]:
    assert found in RESTING
    return {
        "runId": run_id,
        "found": found,
        "maxTasks": max_tasks,
        "maxTokens": max_tokens,
        "stopOnApproval": stop_on_approval,
        "startedAt": started_at,
        "tasks": 0,
        "tokens": 0,
        "llmCalls": 0,
        "ended": "",
    }


def active(process: ThinkProcess) -> dict[str, Any] | None:
    quota = process.run_quota
    if not quota or quota.get("ended"):
        return None
    return quota


def counted(
    quota: dict[str, Any], tokens: int, llm_calls: int, process: ThinkProcess
) -> dict[str, Any]:
    """The quota after one more committed turn, `ended` set when it is spent."""
    after = {
        **quota,
        "tasks": int(quota["tasks"]) + 1,
        "tokens": int(quota["tokens"]) + tokens,
        "llmCalls": int(quota["llmCalls"]) + llm_calls,
    }
    if after["tasks"] >= int(after["maxTasks"]):
        after["ended"] = "maxTasks"
    elif after["maxTokens"] and after["tokens"] >= int(after["maxTokens"]):
        after["ended"] = "maxTokens"
    else:
        for check in _stop_checks:
            try:
                reason = check(process, after)
            except Exception:
                log.exception("%s: a quota stop check failed", process.public_id)
                continue
            if reason:
                after["ended"] = reason
                break
    return after


def ended(quota: dict[str, Any], reason: str) -> dict[str, Any]:
    """The quota marked over (keeping a reason it already had)."""
    return {**quota, "ended": quota.get("ended") or reason}


def resting(quota: dict[str, Any]) -> tuple[Call, Status]:
    """The call and status that put the process back where the continuation found it."""
    return RESTING[str(quota["found"])]
