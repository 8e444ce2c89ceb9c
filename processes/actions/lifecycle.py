"""Lifecycle calls: start, pause, resume, suspend, stop, reset.

Each checks the transition table first (409, nothing changed), takes the process's lane (a
pause, suspend or stop first asks a running turn to stop at its next boundary), calls the
engine with a fresh context, and commits the engine's work and the new status in one fenced
transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db.models import Q

from engines import messages
from engines.context import Finish
from processes.actions.reports import report_to_parent
from processes.budgets import BudgetExceeded
from processes.lane import lease as lanes
from processes.lane.commit import commit_call, ended_status
from processes.lane.context_builder import build_context, engine_of
from processes.lane.dispatch import wake_lane
from processes.lane.interrupts import clear_interrupt, request_interrupt
from processes.models import ThinkProcess
from processes.queries import load_process, pending_count
from processes.recovery import expire_if_stale
from processes.states import WAKE_ON_MESSAGE, Call, CloseReason, Status, check_call
from sessions_app.models import SessionStatus
from vancetope.errors import Conflict, TurnControl, Unavailable

log = logging.getLogger(__name__)

INTERRUPTING = frozenset({Call.PAUSE, Call.SUSPEND, Call.STOP})


def start_process(
    process_id: int, drive: Callable[[lanes.Lease], object] | None = None
) -> ThinkProcess:
    """`drive`: what a caller that may run the process's turns (a lane task) does with the
    lane when the start leaves work (its deferred goal): it is handed the lease, still held,
    instead of waking the lane, so the first turn costs no second acquisition."""
    return lifecycle_call(process_id, Call.START, drive=drive)


def pause_process(process_id: int) -> ThinkProcess:
    return lifecycle_call(process_id, Call.PAUSE)


def resume_process(process_id: int) -> ThinkProcess:
    """Resume a paused or suspended process; a process BLOCKED because its LLM provider failed
    tries its pending messages again (its lane moves it to RUNNING)."""
    process = load_process(process_id)
    if process.status == Status.BLOCKED and process.last_error.startswith(messages.PROVIDER_FAILED):
        check_session_allows(process, Call.RESUME)
        if pending_count(process_id):
            wake_lane(process_id)
        return process
    return lifecycle_call(process_id, Call.RESUME)


def suspend_process(process_id: int) -> ThinkProcess:
    return lifecycle_call(process_id, Call.SUSPEND)


def stop_process(process_id: int) -> ThinkProcess:
    return lifecycle_call(process_id, Call.STOP)


def reset_process(process_id: int) -> ThinkProcess:
    return lifecycle_call(process_id, Call.RESET)


def check_session_allows(process: ThinkProcess, call: Call) -> None:
    """A closed session's processes stay closed: only stop (a no-op there) gets through."""
    if call is not Call.STOP and process.session.status == SessionStatus.CLOSED:
        raise Conflict(
            f"cannot {call.value} process {process.public_id}: "
            f"its session {process.session.public_id} is CLOSED"
        )


def continue_process(process_id: int, run_quota: dict[str, Any]) -> ThinkProcess:
    """Resume a PAUSED or SUSPENDED process for a bounded continuation
    (processes/lane/quota.py): the quota is written with the resume, in its commit."""
    return lifecycle_call(process_id, Call.RESUME, extra={"run_quota": run_quota})


def lifecycle_call(
    process_id: int,
    call: Call,
    *,
    extra: dict[str, Any] | None = None,
    drive: Callable[[lanes.Lease], object] | None = None,
) -> ThinkProcess:
    process = load_process(process_id)
    check_call(call, process.status, process.close_reason, label=process.public_id)
    check_session_allows(process, call)
    if call is not Call.STOP and expire_if_stale(process):
        raise Conflict(
            f"process {process.public_id} is CLOSED/STALE: engine {process.think_engine} "
            f"{process.engine_version} is no longer available"
        )
    if call in INTERRUPTING:
        request_interrupt(process_id, call)
    try:
        lease = lanes.acquire(process_id, wait=settings.VANCETOPE_LIFECYCLE_WAIT_SECONDS)
        if lease is None:
            raise Unavailable(f"process {process.public_id} is busy; try again")
        with lanes.holding(lease, hand_over=drive is not None) as keeper:
            # The row as the lease took it (one statement); its session as read above.
            held = lease.process or load_process(process_id)
            held.session = process.session
            process = held
            rule = check_call(call, process.status, process.close_reason, label=process.public_id)
            engine = engine_of(process)
            # Turns the engine queues for itself (a start's deferred goal) are stored by the
            # call's commit, with its new status.
            own_turns: list[str] = []
            prepared = build_context(engine, process, keeper, queue_turn=own_turns.append)
            assert rule.to is not None
            to_status, reason = rule.to, ""
            try:
                if call is Call.RESET:
                    process.engine_state = {}
                else:
                    getattr(engine, call.value)(process, prepared.ctx)
            except BudgetExceeded as exc:
                if call is not Call.START:
                    raise
                # A start that breaks its tree's budget (spawning, or an LLM call) fails.
                prepared.ctx.finish(Finish.FAILED, error=exc.message)
            if call is Call.STOP:
                reason = CloseReason.STOPPED
            if call is Call.START:
                to_status, reason = ended_status(prepared, rule.to)
            elif prepared.ctx.outcome is not None:
                # Only start and steer decide about the process (engines/base.py Contract).
                log.warning(
                    "%s: engine %s decided %s in %s; ignored",
                    process.public_id,
                    process.think_engine,
                    prepared.ctx.outcome,
                    call.value,
                )
            commit_call(
                process, lease, prepared, call, to_status, reason, own_turns=own_turns, extra=extra
            )
    except BudgetExceeded as exc:
        raise exc.refusal() from exc
    except TurnControl as exc:
        # The engine's call met a boundary (its lease lost, an interrupt): nothing was
        # committed, and the caller is told as a busy lane is.
        raise Unavailable(f"process {process.public_id} is busy ({exc}); try again") from exc
    finally:
        if call in INTERRUPTING:
            clear_interrupt(process_id, call)
    try:
        report_to_parent(process, process.status, process.close_reason)
        if call in CASCADES:
            cascade_to_children(process_id, call)
        work = process.status in WAKE_ON_MESSAGE and bool(own_turns or pending_count(process_id))
    except BaseException:
        if drive is not None and not lease.released:
            lanes.release(lease)
        raise
    if drive is not None and not lease.released:
        # The lane was kept (lanes.holding's hand_over): driven here, or let go.
        if not work:
            lanes.release(lease)
            return process
        lease.process = process
        drive(lease)
    elif work:
        wake_lane(process_id)
    return process


# A call that goes on to the process's children (and, by their own calls, to theirs): which
# children it reaches, and which refusals leave a child as it is. A stopped process's open
# children are stopped (nobody would read what they report), refused only when closed
# meanwhile; pausing pauses the tree (each child stops at its next boundary) and resuming
# resumes the paused ones, leaving any child whose status does not allow it (not started yet,
# closed meanwhile) or whose lane is busy.
CASCADES: dict[Call, tuple[Q, tuple[type[Exception], ...]]] = {
    Call.STOP: (~Q(status=Status.CLOSED), (Conflict,)),
    Call.PAUSE: (
        ~Q(status__in=[Status.CLOSED, Status.PAUSED, Status.INIT]),
        (Conflict, Unavailable),
    ),
    Call.RESUME: (Q(status=Status.PAUSED), (Conflict, Unavailable)),
}


def cascade_to_children(process_id: int, call: Call) -> None:
    reached, left_alone = CASCADES[call]
    children = ThinkProcess.objects.filter(reached, parent_id=process_id)
    for child_id in children.values_list("pk", flat=True):
        try:
            lifecycle_call(child_id, call)
        except left_alone:
            continue
