"""Run logs of a person's sessions (trigger `user`): one run is one wake of a process of a human
session (client type cli, web, desktop or mobile), from the turn that moves it to RUNNING until
it rests IDLE, BLOCKED or CLOSED.

The lane tells `wake_committed` inside each commit of the wake
(processes/lane/wake_listeners.py), so the run log costs the turn one statement and no
transaction of its own: a run of one turn (a chat turn) is INSERTed already finished by the
commit that ends it; a run of several turns is INSERTed `running` by its first commit and
UPDATEd in place by the one that ends it. Its record is the process's own transitions and turns
(RunTransition rows are for system runs, whose status changes after the fact).

Its `run` event (PROTOCOL: a run of this user started or finished) goes to the session the
run is in, stored with the turn's other events in the same statement; the run's write returns
its id and its project (RETURNING), so the event costs the turn no statement. A run of one
turn is announced once, finished; a longer one when it starts and when it ends. The person's
other sessions are not sent it (run_events.person_run_event says why).

Children of a person's process have no run of their own: what a child spends (turns, tokens,
LLM calls) is added to the latest run of its root process when the child's wake ends, so the
run that spawned the work counts it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.utils import timezone

from processes.lane import quota as quotas
from processes.lane.wake_listeners import Wake
from processes.models import ThinkProcess
from processes.queries import session_facts
from processes.states import CloseReason, Status
from protocol.outbound import Event
from sessions_app.models import HUMAN_CLIENT_TYPES
from triggers import transitions
from triggers.models import Notification, RunLog, RunStatus, TriggerType
from triggers.runs import events as run_events
from vancetope.infra import fastsql

# The key of a process's params that names its system run (triggers.runs.system.RUN_PARAM).
RUN_PARAM = "runId"
# The wake's key for its run log (Wake.stored): 1 once it is stored `running`.
# The wake is a cron job's bounded continuation (processes/lane/quota.py), not a person's.
CONTINUED = "continued"
STORED = "runLog"
# Set when the wake goes on with the run its process had blocked in.
WOKEN = "woken"

# Notifications sent for a process's run before its run log is stored (an approval posted in
# the run's first turn), by root process: the commit that stores the run counts them and links
# them to it. Per worker, as the turn that posts them runs in this worker's lane.
_unstored_notices: dict[int, list[int]] = {}


def wake_committed(wake: Wake, status: str, reason: str) -> list[Event]:
    """The wake_committed receiver's work: store or finish the run log of a person's process."""
    process = wake.process
    params = process.engine_params
    if isinstance(params, dict) and RUN_PARAM in params:
        return []  # the process of a system (or workflow) run: triggers.runs.system logs it
    if CONTINUED in wake.stored or quotas.active(process) is not None:
        # A cron job's continuation of the process: its cron run logs the wake.
        wake.stored[CONTINUED] = 1
        return []
    if status == Status.RUNNING and process.parent_id is not None:
        return []
    facts = session_facts(process.session_id)
    if facts is None or not facts.is_human or facts.client_type not in HUMAN_CLIENT_TYPES:
        return []
    if process.parent_id is not None:
        _add_to_root_run(process, wake)
        return []
    stored = wake.stored.get(STORED)
    if not stored:
        woken = _wake_blocked_run(wake)
        if woken is not None:
            stored = woken[0].pk
            if status == Status.RUNNING:
                return [run_events.person_run_event(*woken)]
    if status == Status.RUNNING:
        if stored:
            return []
        run, slug = _insert(wake, facts, RunStatus.RUNNING, {})
        wake.stored[STORED] = run.pk
        return [run_events.person_run_event(run, slug)]
    to_status, changes = outcome(process, status, reason)
    count: Any = int
    if WOKEN in wake.stored:
        # The run the process blocked in goes on: this wake's work adds to it, and what it
        # waited for is no longer what it ends with.
        changes.setdefault("tasks_blocked", 0)
        changes.setdefault("blocked_reasons", [])
        count = fastsql.Add
    changes.update(
        tasks_executed=count(wake.turns),
        tokens_used=count(wake.tokens),
        llm_calls=count(wake.llm_calls),
        finished_at=timezone.now(),
    )
    if not stored:
        run, slug = _insert(wake, facts, to_status, changes)
    else:
        notices = _unstored_notices.pop(process.pk, [])
        changes["notifications_sent"] = fastsql.Add(len(notices))
        rested = transitions.rest(stored, to_status, changes)
        if rested is None:
            return []
        run, slug = rested
        _link(notices, run.pk)
    return [run_events.person_run_event(run, slug)]


def _wake_blocked_run(wake: Wake) -> tuple[RunLog, str] | None:
    """A process that woke from BLOCKED (its question answered, its provider back): its latest
    run, if that one ended blocked, goes on (blocked → running, in place) instead of a new run
    starting, so a finished process's run does not stay "blocked" for ever. One statement, and
    none for a wake from IDLE (every chat turn)."""
    if wake.woke_from != Status.BLOCKED:
        return None
    process = wake.process
    woken = transitions.wake_latest(process.pk, TriggerType.USER, LATEST_RUN)
    if woken is None:
        return None
    wake.stored[STORED] = woken[0].pk
    wake.stored[WOKEN] = 1
    return woken


def _link(notices: list[int], run_pk: int) -> None:
    """The notifications sent before the run was stored are the run's (no statement when
    there were none)."""
    if notices:
        Notification.objects.filter(pk__in=notices).update(run_id=run_pk)


def outcome(process: ThinkProcess, status: str, reason: str) -> tuple[RunStatus, dict[str, Any]]:
    """What a person's run ended as: completed at rest (IDLE, or done), blocked with its
    reasons, failed with its error."""
    if status == Status.BLOCKED:
        why = process.last_error or "waiting for a person"
        reasons = [{"processId": process.public_id, "reason": why}]
        return RunStatus.BLOCKED, {"tasks_blocked": 1, "blocked_reasons": reasons}
    if status == Status.CLOSED and reason != CloseReason.DONE:
        error = process.last_error or f"{process.public_id} ended {reason}"
        return RunStatus.FAILED, {"error": error}
    return RunStatus.COMPLETED, {}


def _insert(
    wake: Wake, facts: Any, status: RunStatus, changes: dict[str, Any]
) -> tuple[RunLog, str]:
    """One INSERT without a RunLog instance (fastsql.insert_values: the columns it leaves out
    get the model's defaults), returning the run's id and its project's slug: the run (an
    unsaved copy with that id, for its event) and the slug."""
    process = wake.process
    notices = _unstored_notices.pop(process.pk, [])
    run = {
        "owner_id": facts.owner_id,
        "project_id": facts.project_id,
        "session_id": process.session_id,
        "client_type": facts.client_type,
        "trigger_type": TriggerType.USER,
        "process_id": process.pk,
        "process_public_id": process.public_id,
        "started_at": wake.started_at,
        "notifications_sent": len(notices),
        **changes,
    }
    returning = f"{{id}}, {transitions.project_slug_sql()}"
    [(pk, slug)] = fastsql.insert_values(
        RunLog, [transitions.store(run, status)], returning=returning
    )
    _link(notices, pk)
    # Built by position (fastsql.build), as RunLog(pk=pk, **run) would be, for its event.
    return fastsql.build(RunLog, {"id": pk, **run}), slug


# The latest run of a person's process (`%s`, trigger `%s`), as a prepared statement's WHERE:
# every child's wake in a tree adds to it.
LATEST_RUN = (
    "{id} = (SELECT MAX({id}) FROM {table} WHERE {process_id} = %s AND {trigger_type} = %s)"
)


def _add_to_root_run(process: ThinkProcess, wake: Wake) -> None:
    """A child's wake ended: its work counts in its root's latest run (one statement)."""
    root = process.root_id or process.parent_id
    fastsql.update(
        RunLog,
        LATEST_RUN,
        [root, TriggerType.USER],
        {
            "tasks_executed": fastsql.Add(wake.turns),
            "tokens_used": fastsql.Add(wake.tokens),
            "llm_calls": fastsql.Add(wake.llm_calls),
        },
    )


def count_notice(process: ThinkProcess) -> tuple[RunLog | None, int | None]:
    """A notification is about to be sent for a task of this process of a person's session:
    count it in the run it belongs to (its root's running or latest run), and return that run;
    or, when that run is not stored yet (its first turn is still going), return its root
    process, to give `keep_unstored` the notification's id: the commit that stores the run
    counts and links it."""
    root = process.root_id or process.pk
    latest = (
        RunLog.objects.filter(process_id=root, trigger_type=TriggerType.USER)
        .order_by("-pk")
        .select_related("project")
        .first()
    )
    running = ThinkProcess.objects.filter(pk=root, status=Status.RUNNING).exists()
    if running and (latest is None or latest.status != RunStatus.RUNNING):
        return None, root
    if latest is None:
        return None, None
    RunLog.objects.filter(pk=latest.pk).update(notifications_sent=F("notifications_sent") + 1)
    latest.notifications_sent += 1
    return latest, None


def keep_unstored(root: int, notification_id: int) -> None:
    _unstored_notices.setdefault(root, []).append(notification_id)
