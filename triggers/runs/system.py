"""Runs: one code path for system clients, and their run logs.

A run opens its session through `create_session` as every client does (a system session:
owner `_system`, `is_human=false`, `system=true`, no tools; or, for a person's
`workflow-start`, their own session), creates its process through the ordinary process
services, and writes a RunLog `running`. Nothing polls or waits for it: the process carries the
run's id in its params, and when it comes to rest (BLOCKED, CLOSED, or IDLE with nothing left
to do: no pending message, no open child) the settled hook of
processes/actions/reports.py calls `process_settled` (registered in TriggersConfig.ready),
which finishes the run log, asks the owner the question a blocked task waits for (a QUESTION
inbox item), notifies the owner of a run that blocked or failed, and closes a session the run
opened. A blocked run leaves its session open, so that its process can still be
answered; when its process comes to rest again the run goes blocked → running (at the time
the process left BLOCKED) → its real end, and the session it opened closes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F, Q, Sum

from engines.tasktree import OPEN, TaskTree
from inbox.models import InboxItem, InboxKind, InboxStatus
from inbox.services import TITLE_MAX, post_item
from processes.actions import lifecycle
from processes.actions import sessions as session_cases
from processes.actions.create import create_process
from processes.actions.reports import summary_of
from processes.models import PendingKind, PendingMessage, ProcessTransition, ThinkProcess
from processes.states import CloseReason, Status
from sessions_app import services as sessions
from sessions_app.models import ClientType, DisconnectPolicy, Session, SessionStatus
from triggers import transitions
from triggers.models import RunLog, RunStatus, TriggerType, Workflow
from triggers.notifications import notify
from triggers.runs.events import announce
from triggers.workflows.services import get_visible_workflow, instantiate
from vancetope.errors import BrainError, NotFound
from vancetope.ids import parse_public_id
from vancetope.infra import fastsql
from vancetope.tenancy.models import Project, ProjectMembership

log = logging.getLogger(__name__)

# The key of a run's process params that names its run (`run_12`): the settled hook reads it
# from the process in hand, so a process of no run costs the hook no query.
RUN_PARAM = "runId"


@dataclass(frozen=True)
class Started:
    process: ThinkProcess
    run: RunLog


# --- starting ------------------------------------------------------------------------------------


def open_system_session(project: Project, client_type: str) -> Session:
    """A new system session of one run, opened as every client's is (`create_session`), with
    no chat process: a system client brings no chat."""
    user = sessions.system_user()

    def opened() -> Session:
        return session_cases.create_session(
            user,
            client_type=client_type,
            project_id=project.public_id,
            on_disconnect=DisconnectPolicy.CLOSE,
            system=True,
            chat=False,
        )

    try:
        return opened()
    except NotFound:
        # The project's first system run: `_system` becomes its member (once, not per run).
        ProjectMembership.objects.get_or_create(user=user, project=project)
        return opened()


@dataclass(frozen=True)
class Trigger:
    """What started a run: its trigger type, the system client it runs as, and its source
    (RunLog's `cron_id`, `webhook_id`, `delivery_id`)."""

    type: TriggerType = TriggerType.WORKFLOW
    client_type: str = ClientType.WORKFLOW
    cron_id: str = ""
    webhook_id: str = ""
    delivery_id: str = ""


# A workflow run started over REST.
BY_REST = Trigger()


def run_workflow(user: Any, workflow_id: str, values: Any, trigger: Trigger = BY_REST) -> Started:
    """`POST /api/workflows/{id}/run` (or a cron job's or a webhook's `run_workflow`): the
    workflow's process in a system session of its own (client type `workflow`, or the
    trigger's), for `user`. A missing or unknown input is a 400 before anything is opened."""
    workflow = get_visible_workflow(user, workflow_id)
    goal, tasks = instantiate(workflow.body, values)
    session = open_system_session(workflow.project, trigger.client_type)
    return _start(user, session, workflow, goal, tasks, owns_session=True, trigger=trigger)


def start_workflow_in_session(user: Any, session_id: int, workflow_id: str, values: Any) -> Started:
    """`workflow-start` over the WebSocket: the person asked in their session, so the
    process runs there (its task tree reaches their socket); the session stays theirs."""
    session = sessions.get_visible_session(user, session_id)
    workflow = get_visible_workflow(user, workflow_id)
    if workflow.project_id != session.project_id:
        raise NotFound(f"workflow {workflow.public_id} not found in this session's project")
    goal, tasks = instantiate(workflow.body, values)
    return _start(user, session, workflow, goal, tasks, owns_session=False)


def _start(
    owner: Any,
    session: Session,
    workflow: Workflow,
    goal: str,
    tasks: list[dict[str, Any]],
    *,
    owns_session: bool,
    trigger: Trigger = BY_REST,
) -> Started:
    run = transitions.start(
        RunLog(
            owner=owner,
            project=workflow.project,
            session=session,
            owns_session=owns_session,
            client_type=session.client_type,
            trigger_type=trigger.type,
            cron_id=trigger.cron_id,
            webhook_id=trigger.webhook_id,
            delivery_id=trigger.delivery_id,
            workflow=workflow,
        ),
        announce,
    )
    try:
        process = create_process(
            session,
            goal=goal,
            engine=workflow.body.get("engine", "marvin"),
            params={"tasks": tasks, RUN_PARAM: run.public_id},
            start=False,
            # In a `_system` session: its owner reads the run's processes.
            run_owner=owner if session.owner_id != owner.pk else None,
        )
    except BrainError as exc:
        _fail_to_start(run, session, exc.message)
        raise
    RunLog.objects.filter(pk=run.pk).update(process=process, process_public_id=process.public_id)
    run.process, run.process_public_id = process, process.public_id
    process = lifecycle.start_process(process.pk)
    run.refresh_from_db()
    return Started(process, run)


def _fail_to_start(run: RunLog, session: Session, error: str) -> None:
    with transaction.atomic():
        transitions.finish(run, RunStatus.FAILED, {"error": error}, announce)
    if run.owns_session:
        session_cases.close_session(session.pk)


# --- finishing -----------------------------------------------------------------------------------


def process_settled(process: ThinkProcess, status: str, reason: str) -> None:
    """The settled hook: a process of a run came to rest. Costs nothing for other processes."""
    params = process.engine_params if isinstance(process.engine_params, dict) else {}
    run_id = params.get(RUN_PARAM)
    if not isinstance(run_id, str) or status not in {Status.BLOCKED, Status.CLOSED, Status.IDLE}:
        return
    if status == Status.IDLE and not at_rest(process):
        return  # it waits for its children's reports, or has more to do
    run = RunLog.objects.select_related("project", "workflow").filter(pk=_pk(run_id)).first()
    if run is None:
        return
    current = ThinkProcess.objects.select_related("session").filter(pk=process.pk).first()
    if current is None:
        return
    if status == Status.BLOCKED:
        # Before the run's finish, so that its notification can name the question.
        ask_owner(run, current)
    if run.status == RunStatus.BLOCKED:
        _wake_blocked(run, current)
    if run.status == RunStatus.RUNNING:
        finish_run(run, current)
    if status != Status.BLOCKED and run.owns_session and run.session_id is not None:
        _close_when_open(run.session_id)


def at_rest(process: ThinkProcess) -> bool:
    """An IDLE process of a run with nothing left to do: no unfinished task of its tree, no
    pending message, no open child, and the report of every child that closed has reached it
    (a child is CLOSED a moment before its report is delivered)."""
    tree = TaskTree.of(process.engine_state)
    if tree is not None and any(node.status in OPEN for node in tree.nodes):
        return False
    if PendingMessage.objects.filter(process_id=process.pk, consumed=False).exists():
        return False
    children = list(ThinkProcess.objects.filter(parent_id=process.pk).values_list("pk", "status"))
    if any(status != Status.CLOSED for _, status in children):
        return False
    if not children:
        return True
    reported = PendingMessage.objects.filter(
        process_id=process.pk,
        kind=PendingKind.PARENT_REPORT,
        payload__event__in=list(CLOSE_REPORTS),
    ).values_list("payload__childId", flat=True)
    return {f"tp_{pk}" for pk, _ in children} <= set(reported)


# The close reasons a parent hears about.
CLOSE_REPORTS = frozenset({CloseReason.DONE, CloseReason.STOPPED, CloseReason.FAILED})


def _wake_blocked(run: RunLog, process: ThinkProcess) -> None:
    """The blocked run's process went on (it was answered) and came to rest again: the run
    is running again from when its process left BLOCKED."""
    left = (
        ProcessTransition.objects.filter(process_id=process.pk, from_status=Status.BLOCKED)
        .order_by("-at", "-pk")
        .values_list("at", flat=True)
        .first()
    )
    if left is None or (run.finished_at is not None and left < run.finished_at):
        return  # still the block the run finished on
    with transaction.atomic():
        transitions.wake(run, left, detail=f"{process.public_id} went on")


def _pk(run_id: str) -> int:
    try:
        return parse_public_id("run", run_id, "run")
    except NotFound:
        return 0


def _close_when_open(session_id: int) -> None:
    if Session.objects.filter(pk=session_id, status=SessionStatus.CLOSED).exists():
        return
    session_cases.close_session(session_id)


@dataclass(frozen=True)
class Outcome:
    status: RunStatus
    executed: int
    blocked: list[dict[str, Any]]
    error: str


def outcome_of(process: ThinkProcess) -> Outcome:
    """What the process's status and task tree (if it has one) say about the run."""
    tree = TaskTree.of(process.engine_state)
    nodes = tree.tasks if tree is not None else []
    executed = sum(1 for node in nodes if node.status == "DONE")
    blocked = [
        {
            "taskId": node.id,
            "taskTitle": node.title,
            "processId": process.public_id,
            "reason": f"waiting for input: {node.goal or node.title}",
        }
        for node in nodes
        if node.status == "BLOCKED"
    ]
    if process.status == Status.BLOCKED:
        if not blocked:
            reason = process.last_error or "waiting for a person"
            blocked = [{"processId": process.public_id, "reason": reason}]
        return Outcome(RunStatus.BLOCKED, executed, blocked, "")
    # A process at rest IDLE with nothing left to do ended its work as one that is done.
    done = process.close_reason == CloseReason.DONE or process.status == Status.IDLE
    if not nodes and done:
        executed = 1
    if done:
        partial = any(node.status in {"FAILED", "SKIPPED"} for node in nodes)
        status = RunStatus.COMPLETED_PARTIAL if partial else RunStatus.COMPLETED
        return Outcome(status, executed, [], "")
    error = process.last_error or f"{process.public_id} ended {process.close_reason}"
    return Outcome(RunStatus.FAILED, executed, [], error)


def tree_usage(process: ThinkProcess) -> tuple[int, int]:
    """Tokens and LLM calls of the process and every process spawned under it."""
    total = ThinkProcess.objects.filter(Q(pk=process.pk) | Q(root_id=process.pk)).aggregate(
        tokens=Sum(F("prompt_tokens") + F("completion_tokens")), calls=Sum("llm_calls")
    )
    return int(total["tokens"] or 0), int(total["calls"] or 0)


def finish_run(run: RunLog, process: ThinkProcess) -> None:
    """Write the run's outcome (once), and notify its owner when it blocked or failed."""
    outcome = outcome_of(process)
    tokens, calls = tree_usage(process)
    notice = _notice(run, process, outcome)
    changes = {
        "tasks_executed": outcome.executed,
        "tasks_blocked": len(outcome.blocked),
        "blocked_reasons": outcome.blocked,
        "tokens_used": tokens,
        "llm_calls": calls,
        "error": outcome.error,
        # Beside the approvals its tasks asked for (triggers/runs/approvals.py), counted already.
        "notifications_sent": fastsql.Add(1 if notice else 0),
    }
    with transaction.atomic():
        if not transitions.finish(run, outcome.status, changes, announce, detail=outcome.error):
            return
        if notice:
            text, level = notice
            notify(run.owner, run.project, text, level, run=run, process_id=process.public_id)
        if outcome.status in {RunStatus.COMPLETED, RunStatus.COMPLETED_PARTIAL}:
            post_result(run, process)


def post_result(run: RunLog, process: ThinkProcess) -> InboxItem:
    """A finished run's result, for the person it works for: an OUTPUT_TEXT inbox item of
    its process (the report its engine writes) and a "finished" notification."""
    name = run.workflow.name if run.workflow is not None else process.public_id
    title = f"Workflow '{name}' finished ({run.public_id})"[:TITLE_MAX]
    body = summary_of(process, CloseReason.DONE) or f"{process.public_id} finished."
    item = post_item(process, InboxKind.OUTPUT_TEXT, title, body, user=run.owner)
    notify(
        run.owner,
        run.project,
        f"Workflow '{name}' ({run.public_id}) finished: its result is {item.public_id} in the "
        "inbox",
        "info",
        run=run,
        process_id=process.public_id,
    )
    RunLog.objects.filter(pk=run.pk).update(notifications_sent=F("notifications_sent") + 1)
    return item


def finish_system_run(
    run: RunLog,
    status: RunStatus,
    changes: dict[str, Any],
    notice: tuple[str, str] | None = None,
    detail: str | None = None,
) -> bool:
    """Write a system run's outcome once (with its owner's notification, `notice` as (text,
    level), counted in notificationsSent), then close its session if it owns one. `detail`:
    its last record row's (default: the error). False, and nothing written, if the run was
    finished already."""
    if notice:
        changes["notifications_sent"] = changes.get("notifications_sent", 0) + 1
    with transaction.atomic():
        done = transitions.finish(
            run, status, changes, announce, changes.get("error", "") if detail is None else detail
        )
        if done and notice:
            text, level = notice
            notify(run.owner, run.project, text, level, run=run, process_id=run.process_public_id)
    if done and run.owns_session and run.session_id is not None:
        session_cases.close_session(run.session_id)  # one that is closed already stays as it is
    return done


def ask_owner(run: RunLog, process: ThinkProcess) -> InboxItem | None:
    """A top-level marvin blocked on a USER_INPUT node has no parent to ask: the run's owner
    gets the question as a QUESTION inbox item of the process, whose answer steers the node
    (once per question: an OPEN item of the process is not asked again)."""
    tree = TaskTree.of(process.engine_state)
    node = next((n for n in tree.nodes if n.status == "BLOCKED"), None) if tree else None
    if node is None or node.kind != "USER_INPUT" or process.parent_id is not None:
        return None
    if InboxItem.objects.filter(origin_process=process, status=InboxStatus.OPEN).exists():
        return None
    title = (node.title or "A question")[:TITLE_MAX]
    return post_item(process, InboxKind.QUESTION, title, node.goal, user=run.owner)


def _notice(run: RunLog, process: ThinkProcess, outcome: Outcome) -> tuple[str, str] | None:
    name = run.workflow.name if run.workflow is not None else process.public_id
    if outcome.status in {RunStatus.COMPLETED, RunStatus.COMPLETED_PARTIAL}:
        waiting = InboxItem.objects.filter(
            Q(origin_process=process) | Q(origin_process__root_id=process.pk),
            kind=InboxKind.APPROVAL,
            status=InboxStatus.OPEN,
        ).first()
        if waiting is not None:
            return (
                f"Workflow '{name}' ({run.public_id}) finished with an approval waiting: "
                f"{waiting.title} (answer {waiting.public_id} in the inbox)",
                "warning",
            )
        return None
    if outcome.status == RunStatus.BLOCKED:
        reasons = "; ".join(reason["reason"] for reason in outcome.blocked)
        asked = InboxItem.objects.filter(origin_process=process, status=InboxStatus.OPEN).first()
        where = f" (answer {asked.public_id} in the inbox)" if asked is not None else ""
        return f"Workflow '{name}' ({run.public_id}) is blocked: {reasons}{where}", "warning"
    if outcome.status == RunStatus.FAILED:
        return f"Workflow '{name}' ({run.public_id}) failed: {outcome.error}", "error"
    return None
