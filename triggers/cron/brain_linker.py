"""The brain linker as a system client: a cron job's `brain_linker` action.

A run opens a system session (client type `brain_linker`) through the same service as every
system run (`runs.open_system_session`), writes a RunLog `running` (trigger `cron`), runs the
memory kernel's linker (vancetope/memory/linker.py) over the job's project, writes what it did
into the run log (LLM calls, tokens, verdicts as tasks, notifications) with its outcome, and
closes the session:

- completed: every pair it found was asked and answered;
- completed_partial: `maxLlmCalls` stopped it with pairs left, or some calls failed;
- failed: every call failed (the first error is the run's), or the run could not start.

A contradiction below the threshold becomes an APPROVAL inbox item of the job's owner (posted
by no process: its origin is the run), with a notification; its answer comes back through the
inbox's origin handler (`approval_answered`): approve invalidates the older item and keeps the
edge, reject invalidates the edge.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from inbox.models import InboxItem, InboxKind
from inbox.services import TITLE_MAX, post_system_item
from sessions_app.models import ClientType
from triggers import transitions
from triggers.models import CronJob, RunLog, RunStatus, TriggerType
from triggers.notifications import notify
from triggers.runs import events as run_events
from triggers.runs import system as runs
from vancetope.memory import linker
from vancetope.memory.models import MemoryItem

log = logging.getLogger(__name__)

# The origin of the linker's inbox items: its run's id (run_N).
ORIGIN_PREFIX = "run_"

STATUSES = {
    "completed": RunStatus.COMPLETED,
    "completed_partial": RunStatus.COMPLETED_PARTIAL,
    "failed": RunStatus.FAILED,
}


def run_linker_job(job: CronJob) -> RunLog:
    """One firing of a `brain_linker` cron job, start to end; its finished RunLog."""
    session = runs.open_system_session(job.project, ClientType.BRAIN_LINKER)
    since = previous_run_start(job)
    run = transitions.start(
        RunLog(
            owner=job.owner,
            project=job.project,
            session=session,
            owns_session=True,
            client_type=ClientType.BRAIN_LINKER,
            trigger_type=TriggerType.CRON,
            cron_id=job.public_id,
        ),
        run_events.announce,
    )
    action = job.action
    limits = action.get("constraints") or {}
    try:
        report = linker.run_linker(
            job.project,
            list(action.get("strategies") or []),
            limits.get("maxLlmCalls"),
            run_id=run.public_id,
            since=since,
            ask=lambda uncertain: _ask(run, uncertain),
        )
    except Exception as exc:
        log.exception("%s: the linker run failed", run.public_id)
        error = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        _finish(run, RunStatus.FAILED, {"error": error}, error)
        return run
    status = STATUSES[report.status]
    changes: dict[str, Any] = {
        "tasks_executed": report.verdicts,
        "llm_calls": report.llm_calls,
        "tokens_used": report.tokens,
        "notifications_sent": len(report.approvals_posted),
    }
    if report.errors:
        changes["error"] = (
            report.errors[0]
            if len(report.errors) == 1
            else f"{len(report.errors)} calls failed; the first: {report.errors[0]}"
        )
    _finish(run, status, changes, report.summary())
    return run


def previous_run_start(job: CronJob) -> datetime | None:
    """When the project's last completed linker run started: the items written since are the
    recent ones (None: the window setting decides). A run cut short or failed does not count,
    so what it left is looked at again (pairs it judged are not asked twice)."""
    return (
        RunLog.objects.filter(
            project=job.project,
            client_type=ClientType.BRAIN_LINKER,
            status=RunStatus.COMPLETED,
        )
        .order_by("-started_at")
        .values_list("started_at", flat=True)
        .first()
    )


def _finish(run: RunLog, status: RunStatus, changes: dict[str, Any], detail: str) -> None:
    notice = None
    if status == RunStatus.FAILED:
        notice = (
            f"Brain linker {run.cron_id} ({run.public_id}) failed: {changes['error']}",
            "error",
        )
    runs.finish_system_run(run, status, changes, notice, detail[:2000])


def _ask(run: RunLog, uncertain: linker.Uncertain) -> str:
    """The linker's approval poster for this run: an APPROVAL of the job's owner showing both
    items, the reasoning and the confidence, and a notification naming it."""
    older, newer = uncertain.older, uncertain.newer
    title = f"Does {newer.public_id} contradict {older.public_id}?"[:TITLE_MAX]
    body = (
        f"The brain linker ({run.public_id}) found a possible contradiction, with confidence "
        f"{uncertain.confidence:.2f} (below the threshold {uncertain.threshold:.2f}), and "
        f"recorded it as {uncertain.edge.public_id}.\n\n"
        f"**Older** {_described(older)}\n\n> {_quoted(older.content)}\n\n"
        f"**Newer** {_described(newer)}\n\n> {_quoted(newer.content)}\n\n"
        f"**Reasoning**\n\n{uncertain.reasoning}\n\n"
        f"Approve to invalidate the older item {older.public_id} (the edge stays); reject to "
        f"invalidate the edge {uncertain.edge.public_id} (both items stay)."
    )
    item = post_system_item(run.project, run.owner, run.public_id, InboxKind.APPROVAL, title, body)
    notify(
        run.owner,
        run.project,
        f"The brain linker ({run.public_id}) asks for your approval: {title} "
        f"(answer {item.public_id} in the inbox)",
        "warning",
        run=run,
    )
    return item.public_id


def _described(item: MemoryItem) -> str:
    key = f", key `{item.key}`" if item.key else ""
    return f"{item.public_id} ({item.scope} scope{key}, written {item.created_at:%Y-%m-%d %H:%M})"


def _quoted(text: str) -> str:
    return "\n> ".join(text.splitlines() or [""])


def approval_answered(item: InboxItem, answer: dict[str, Any], by: Any) -> str | None:
    """The inbox's origin handler for `run_` items: the linker's approvals."""
    if item.kind != InboxKind.APPROVAL or "decision" not in answer:
        return None
    name = by.get_username() if by is not None else "expiry"
    return linker.settle_approval(item.public_id, answer["decision"] == "approve", name)
