"""Firing a cron job: claimed once, then run as a system client.

`fire` first writes the CronFiring row (job, scheduled minute): its unique constraint is the
claim, so a second beat process, a redelivered task or a manual run of the same moment finds it
taken and runs nothing. With overlap `skip`, a firing while the job's previous run still runs is
recorded as skipped, naming that run. Otherwise the action runs through the same services as a
person's client would:

- `process_continue` opens a system session (client type `cron`), writes a RunLog for the
  process and resumes it with a quota (processes/lane/quota.py): the lane runs at most
  `maxTasks` turns and `maxTokens`, then puts the process back in the status it was found in.
  The process keeps its own session; the run ends when it settles (`continuation_settled`,
  registered in TriggersConfig.ready), which writes the outcome and closes the run's session.
- `run_workflow` is triggers.runs.system.run_workflow with the cron trigger, for the job's owner.
- `brain_linker` is triggers.cron.brain_linker.run_linker_job: the memory kernel's linker over
  the job's project, as a system client (client type `brain_linker`) with its run log.

Every firing keeps its outcome (ran → its run, skipped with the reason, failed with the error)
so that a person can tell why a schedule did not run.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from inbox.models import InboxItem, InboxKind
from processes.actions import lifecycle
from processes.lane import quota as quotas
from processes.lane.dispatch import wake_lane
from processes.models import ThinkProcess
from processes.queries import is_visible
from processes.states import CloseReason, Status
from sessions_app.models import ClientType, Session
from triggers import transitions
from triggers.cron.brain_linker import run_linker_job
from triggers.cron.jobs import due_minute, get_visible_job
from triggers.models import (
    CronAction,
    CronFiring,
    CronJob,
    CronOverlap,
    FiringOutcome,
    RunLog,
    RunStatus,
    TriggerType,
)
from triggers.runs import events as run_events
from triggers.runs import system as runs
from vancetope.errors import BrainError, NotFound
from vancetope.ids import parse_public_id
from vancetope.observability import metrics

log = logging.getLogger(__name__)


class _ClaimedBefore(Exception):  # noqa: N818 (not an error: another copy claimed the firing)
    """Leaves the claim's transaction, rolling back what it wrote, when the firing is taken."""


def fire(job_id: int, scheduled_for: datetime | None = None, *, manual: bool = False) -> Any:
    """Claim and run one firing of the job; the CronFiring, or None when this firing was
    claimed already (a duplicate: logged, nothing runs) or the job is gone.

    The claim and what a `process_continue` firing opens (its system session and its run,
    the job's last run) are one transaction: a firing's writes each wait for the database to
    flush them, and on PostgreSQL these were most of its time (bench/cron.py). A second copy of
    the firing waits for that transaction at the claim's unique row, then runs nothing."""
    job = CronJob.objects.select_related("project", "owner", "last_run").filter(pk=job_id).first()
    if job is None:
        log.warning("cron job %s is gone; firing dropped", job_id)
        return None
    moment = scheduled_for or due_minute(job)
    opened: tuple[RunLog, ThinkProcess] | None = None
    try:
        with transaction.atomic():
            try:
                firing = CronFiring.objects.create(
                    job=job, scheduled_for=moment, manual=manual, outcome=FiringOutcome.CLAIMED
                )
            except IntegrityError:
                raise _ClaimedBefore from None
            previous = job.last_run
            if job.overlap == CronOverlap.SKIP and previous is not None:
                previous.refresh_from_db(fields=["status"])
                if previous.status == RunStatus.RUNNING:
                    reason = f"skipped: the previous run {previous.public_id} is still running"
                    return _record(firing, FiringOutcome.SKIPPED, reason)
            if job.action_type == CronAction.PROCESS_CONTINUE:
                try:
                    opened = _open_continuation(job)
                except BrainError as exc:
                    return _record(firing, FiringOutcome.FAILED, exc.message)
    except _ClaimedBefore:
        log.info("%s: firing for %s was claimed already; not run twice", job.public_id, moment)
        return None
    try:
        run = _continue(job, *opened) if opened is not None else _run_action(job)
    except BrainError as exc:
        return _record(firing, FiringOutcome.FAILED, exc.message)
    except Exception as exc:
        log.exception("%s: firing failed", job.public_id)
        return _record(firing, FiringOutcome.FAILED, f"{type(exc).__name__}: {exc}")
    if opened is None:
        CronJob.objects.filter(pk=job.pk).update(last_run=run)
    outcome = FiringOutcome.FAILED if run.status == RunStatus.FAILED else FiringOutcome.RAN
    return _record(firing, outcome, run.error, run)


def fire_now(user: Any, job_id: str) -> CronFiring:
    """`POST /api/cron-jobs/{id}/run`: a firing at this moment, whatever the schedule."""
    job = get_visible_job(user, job_id)
    firing = fire(job.pk, timezone.now(), manual=True)
    assert firing is not None  # this moment's claim is new
    return firing


def fire_task_moment(text: str | None) -> datetime | None:
    return parse_datetime(text) if text else None


def _record(
    firing: CronFiring, outcome: FiringOutcome, reason: str, run: RunLog | None = None
) -> CronFiring:
    firing.outcome, firing.reason, firing.run = outcome, reason, run
    CronFiring.objects.filter(pk=firing.pk).update(outcome=outcome, reason=reason, run=run)
    metrics.cron_firing(outcome)
    if outcome != FiringOutcome.RAN:
        log.info("cron_%s firing %s: %s %s", firing.job_id, firing.scheduled_for, outcome, reason)
    return firing


def _run_action(job: CronJob) -> RunLog:
    """The actions other than process_continue, after their claim committed."""
    kind = job.action_type
    if kind == CronAction.RUN_WORKFLOW:
        trigger = runs.Trigger(TriggerType.CRON, ClientType.CRON, job.public_id)
        action = job.action
        return runs.run_workflow(job.owner, action["workflowId"], action["input"], trigger).run
    if kind == CronAction.BRAIN_LINKER:
        return run_linker_job(job)
    raise AssertionError(f"{kind}: opened in the claim's transaction")


def _new_run(job: CronJob, session: Session | None, process: ThinkProcess | None) -> RunLog:
    return transitions.start(
        RunLog(
            owner=job.owner,
            project=job.project,
            session=session,
            owns_session=session is not None,
            client_type=ClientType.CRON,
            trigger_type=TriggerType.CRON,
            cron_id=job.public_id,
            process=process,
            process_public_id=process.public_id if process else "",
        ),
        run_events.announce,
    )


# --- process_continue ----------------------------------------------------------------------------


def _open_continuation(job: CronJob) -> tuple[RunLog, ThinkProcess]:
    """In the claim's transaction: the job's process (if its owner still sees it), the run's
    system session and the run, which becomes the job's last run."""
    process = _visible_process(job.owner, job.action["processId"])
    session = runs.open_system_session(job.project, ClientType.CRON)
    run = _new_run(job, session, process)
    CronJob.objects.filter(pk=job.pk).update(last_run=run)
    return run, process


def _continue(job: CronJob, run: RunLog, process: ThinkProcess) -> RunLog:
    """The run's process resumed under its quota, or the run finished at once when there is
    nothing to continue. The run is returned as this call left it: a resumed process's lane
    finishes it later (`continuation_settled`)."""
    limits = job.action["constraints"]
    found = process.status
    try:
        if found == Status.BLOCKED:
            reason = process.last_error or "waiting for a person"
            blocked = [{"processId": process.public_id, "reason": reason}]
            runs.finish_system_run(
                run, RunStatus.BLOCKED, {"tasks_blocked": 1, "blocked_reasons": blocked}
            )
        elif found not in quotas.RESTING:
            error = (
                f"{process.public_id} is {found}: process_continue continues a PAUSED, "
                "SUSPENDED or IDLE process"
            )
            runs.finish_system_run(run, RunStatus.FAILED, {"error": error})
        elif process.waiting == 0:
            # Nothing to continue: the process stays as it was found.
            runs.finish_system_run(run, RunStatus.COMPLETED, {})
        else:
            quota = quotas.new_quota(
                run.public_id,
                found,
                max_tasks=limits["maxTasks"],
                max_tokens=limits["maxTokens"] or 0,
                stop_on_approval=limits["stopOnApproval"],
                stop_on_client_tool=limits["stopOnClientTool"],
                started_at=run.started_at.isoformat(),
            )
            _resume(process, found, quota)
    except BrainError as exc:
        runs.finish_system_run(run, RunStatus.FAILED, {"error": exc.message})
    return run


def _visible_process(owner: Any, process_id: str) -> ThinkProcess:
    """The job's process, if its owner still sees it (by primary key: one cheap statement)."""
    pk = parse_public_id("tp", process_id, "process")
    process = ThinkProcess.objects.select_related("session").filter(pk=pk).first()
    if process is None or not is_visible(process, owner):
        raise NotFound(f"process {process_id} not found")
    return process


def _resume(process: ThinkProcess, found: str, quota: dict[str, Any]) -> None:
    if found in {Status.PAUSED, Status.SUSPENDED}:
        lifecycle.continue_process(process.pk, quota)
        return
    # IDLE: no status changes, so the quota is written by compare-and-swap on IDLE, and the
    # lane woken for the messages waiting.
    if not ThinkProcess.objects.filter(pk=process.pk, status=Status.IDLE).update(run_quota=quota):
        raise BrainError(f"{process.public_id} changed before it could be continued")
    wake_lane(process.pk)


SETTLED = frozenset({Status.BLOCKED, Status.CLOSED, Status.PAUSED, Status.SUSPENDED})


def continuation_settled(process: ThinkProcess, status: str, reason: str) -> None:
    """The settled hook: a process under a cron quota came to rest (the lane put it back, or
    it blocked, closed, or was paused by someone). Costs nothing for other processes."""
    quota = process.run_quota
    if not quota or "runId" not in quota:
        return
    if not quota.get("ended") and status not in SETTLED:
        return  # the resume that started the continuation, or a turn in between
    running = RunLog.objects.select_related("project")  # its event names the project
    run = running.filter(pk=_pk(quota["runId"]), status=RunStatus.RUNNING).first()
    if run is None:
        return
    current = ThinkProcess.objects.get(pk=process.pk)
    if not quota.get("ended"):
        # Stopped from outside (paused, suspended): the quota bounds no later resume.
        quota = quotas.ended(quota, str(status))
        ThinkProcess.objects.filter(pk=process.pk).update(run_quota=quota)
    status_of, changes = _outcome(current, quota)
    runs.finish_system_run(run, status_of, changes, _notice(run, current, status_of, changes))


def _pk(run_id: str) -> int:
    try:
        return parse_public_id("run", run_id, "run")
    except BrainError:
        return 0


def _outcome(process: ThinkProcess, quota: dict[str, Any]) -> tuple[RunStatus, dict[str, Any]]:
    changes: dict[str, Any] = {
        "tasks_executed": int(quota["tasks"]),
        "tokens_used": int(quota["tokens"]),
        "llm_calls": int(quota["llmCalls"]),
    }
    set_aside = _set_aside(process, quota)
    blocked: list[dict[str, Any]] = []
    if process.status == Status.BLOCKED and process.last_error not in {
        reason["reason"] for reason in set_aside
    }:
        blocked = [{"processId": process.public_id, "reason": process.last_error or "blocked"}]
    elif str(quota.get("ended", "")).startswith("approval "):
        blocked = [{"processId": process.public_id, "reason": f"{quota['ended']}"}]
    if blocked:
        changes.update(tasks_blocked=len(blocked), blocked_reasons=blocked)
        return RunStatus.BLOCKED, changes
    if set_aside:
        # stopOnClientTool false: the other tasks ran; these wait for a client.
        changes.update(tasks_blocked=len(set_aside), blocked_reasons=set_aside)
        done = int(quota["tasks"]) > 0
        return (RunStatus.COMPLETED_PARTIAL if done else RunStatus.BLOCKED), changes
    if process.status == Status.CLOSED:
        if process.close_reason == CloseReason.DONE:
            return RunStatus.COMPLETED, changes
        changes["error"] = process.last_error or f"{process.public_id} {process.close_reason}"
        return RunStatus.FAILED, changes
    partial = process.waiting > 0
    return (RunStatus.COMPLETED_PARTIAL if partial else RunStatus.COMPLETED), changes


def _set_aside(process: ThinkProcess, quota: dict[str, Any]) -> list[dict[str, Any]]:
    """The tasks the continuation set aside for want of a client tool, as blocked reasons."""
    return [
        {
            "processId": process.public_id,
            "taskTitle": entry.get("task", ""),
            "reason": entry["reason"],
        }
        for entry in quota.get("setAside", [])
    ]


def _notice(
    run: RunLog, process: ThinkProcess, status: RunStatus, changes: dict[str, Any]
) -> tuple[str, str] | None:
    if status == RunStatus.BLOCKED:
        reasons = "; ".join(item["reason"] for item in changes["blocked_reasons"])
        return f"Cron {run.cron_id} ({run.public_id}): {process.public_id} {reasons}", "warning"
    if changes.get("blocked_reasons"):
        reasons = "; ".join(item["reason"] for item in changes["blocked_reasons"])
        done = changes["tasks_executed"]
        return (
            f"Cron {run.cron_id} ({run.public_id}): {process.public_id} ran {done} task(s), "
            f"{len(changes['blocked_reasons'])} waiting: {reasons}",
            "warning",
        )
    if status == RunStatus.FAILED:
        return f"Cron {run.cron_id} ({run.public_id}) failed: {changes['error']}", "error"
    return None


def approval_posted(process: ThinkProcess, quota: dict[str, Any]) -> str | None:
    """The quota's stop check for stopOnApproval: an APPROVAL item the process (or a process
    of its tree) posted since the continuation began."""
    if not quota.get("stopOnApproval"):
        return None
    since = parse_datetime(str(quota.get("startedAt", "")))
    items = InboxItem.objects.filter(
        Q(origin_process_id=process.pk) | Q(origin_process__root_id=process.pk),
        kind=InboxKind.APPROVAL,
    )
    if since is not None:
        items = items.filter(created_at__gte=since)
    item = items.order_by("pk").first()
    return f"approval {item.public_id} waits for an answer" if item else None
