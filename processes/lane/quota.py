"""Bounded continuations: a process resumed for at most so many turns and tokens (a cron
job's `process_continue`, docs/protocol.md "Cron job"), then put back in the status it was found in.

The quota lives on the process row (`run_quota`), written with the resume that starts it
(processes/actions/lifecycle.py) and counted by each turn's commit (processes/lane/commit.py),
so a lane that dies mid-continuation resumes within what is left. An empty quota (every other
process) costs a turn one dict test.

    {"runId": "run_12", "found": "PAUSED", "maxTasks": 3, "maxTokens": 0,
     "stopOnApproval": false, "stopOnClientTool": true, "startedAt": "…", "tasks": 2,
     "tokens": 90, "llmCalls": 2, "ended": "", "setAside": []}

`ended` names why the continuation is over ("maxTasks", "maxTokens", "no more work", a stop
check's reason, or the status the process came to rest in); a quota with `ended` set is a
record of the last continuation and bounds nothing.

A task that needs a client tool no client offers (the process's session has none bound) stops
the continuation there, the process BLOCKED on it, when `stopOnClientTool` is true. When it is
false the task is set aside: its message goes to the end of the queue (`setAsideIn` naming the
run in its payload, and `setAside` in the quota the reason), and the continuation goes on with
the other tasks; when nothing but set-aside tasks is left, the process blocks on the first.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from processes import signals
from processes.actions.pending import QUEUED_ON, insert_pending, take_seqs
from processes.lane.lease import Lease, LeaseLost
from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.states import Call, Status
from vancetope.dispatch import send_robust_logged
from vancetope.infra import fastsql

# Statuses a continuation may start from, and the call that puts a process back in each.
RESTING: dict[str, tuple[Call, Status]] = {
    Status.PAUSED: (Call.PAUSE, Status.PAUSED),
    Status.SUSPENDED: (Call.SUSPEND, Status.SUSPENDED),
    Status.IDLE: (Call.TURN_END, Status.IDLE),
}


def new_quota(
    run_id: str,
    found: str,
    *,
    max_tasks: int,
    max_tokens: int,
    stop_on_approval: bool,
    stop_on_client_tool: bool = True,
    started_at: str,
) -> dict[str, Any]:
    assert found in RESTING
    return {
        "runId": run_id,
        "found": found,
        "maxTasks": max_tasks,
        "maxTokens": max_tokens,
        "stopOnApproval": stop_on_approval,
        "stopOnClientTool": stop_on_client_tool,
        "startedAt": started_at,
        "tasks": 0,
        "tokens": 0,
        "llmCalls": 0,
        "ended": "",
        "setAside": [],
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
        # A failing check is logged and stops nothing; the first reason, in order, wins.
        reasons = send_robust_logged(
            signals.quota_turn, ThinkProcess, process.public_id, process=process, quota=after
        )
        reason = next((found for found in reasons if found), None)
        if reason:
            after["ended"] = reason
    return after


def ended(quota: dict[str, Any], reason: str) -> dict[str, Any]:
    """The quota marked over (keeping a reason it already had)."""
    return {**quota, "ended": quota.get("ended") or reason}


def resting(quota: dict[str, Any]) -> tuple[Call, Status]:
    """The call and status that put the process back where the continuation found it."""
    return RESTING[str(quota["found"])]


# A set-aside message's payload key: the run whose continuation set it aside.
SET_ASIDE = "setAsideIn"


def goes_past_client_tool(process: ThinkProcess, message: PendingMessage) -> bool:
    """The continuation sets this task aside instead of stopping at it (stopOnClientTool
    false, and not set aside by this run already)."""
    quota = active(process)
    return (
        quota is not None
        and not quota.get("stopOnClientTool", True)
        and message.payload.get(SET_ASIDE) != quota["runId"]
    )


def set_aside_before(process: ThinkProcess, message: PendingMessage) -> str | None:
    """Why the message waits, if this continuation set it aside already: only set-aside tasks
    are left, so the process blocks on it without running it again."""
    quota = active(process)
    if quota is None or message.payload.get(SET_ASIDE) != quota["runId"]:
        return None
    noted = quota.get("setAside", [])
    reasons = [entry["reason"] for entry in noted if entry["seq"] == message.seq]
    return reasons[0] if reasons else "requires a client tool"


def set_aside(process: ThinkProcess, lease: Lease, message: PendingMessage, reason: str) -> None:
    """Move the message to the end of the queue (a copy under a new seq; the original is
    consumed by this lease) and note it in the quota, in one transaction fenced by the lease."""
    quota = active(process)
    assert quota is not None
    with transaction.atomic():
        queued = take_seqs(process.pk, 1, names=QUEUED_ON)
        assert queued is not None
        seq = queued.next_pending_seq - 1
        noted = {"seq": seq, "reason": reason, "task": str(message.payload.get("text", ""))[:200]}
        after = {**quota, "setAside": [*quota.get("setAside", []), noted]}
        if lease.update({"run_quota": after, "consumed_count": fastsql.Add(1)}) != 1:
            raise LeaseLost(f"lease on {process.public_id} lost while setting a task aside")
        consumed = PendingMessage.objects.filter(pk=message.pk, consumed=False).update(
            consumed=True, consumed_at=timezone.now(), consumed_fence=lease.fence
        )
        if consumed != 1:
            raise LeaseLost(f"message #{message.seq} of {process.public_id} already consumed")
        kind = PendingKind(message.kind)
        insert_pending(queued, kind, [{**message.payload, SET_ASIDE: quota["runId"]}])
    process.run_quota = after
    process.next_pending_seq = queued.next_pending_seq
    process.consumed_count += 1
