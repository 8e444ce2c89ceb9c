"""A turn: the lane drains a process's pending messages in sequence order, one `steer` each.

`drive_lane` is the body of the lane task (processes/lane/tasks.py), on the in-process worker
and on Celery workers alike.
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engines import messages
from engines.base import ThinkEngine
from processes import signals
from processes.actions import lifecycle
from processes.actions.pending import queue_own_turn
from processes.actions.reports import report_to_parent
from processes.budgets import BudgetExceeded
from processes.lane import lease as lanes
from processes.lane import observe, snapshots, wake_listeners
from processes.lane import quota as quotas
from processes.lane.commit import commit_turn, lease_transition, spent
from processes.lane.compaction import compact
from processes.lane.context_builder import Prepared, build_context, engine_of
from processes.lane.interrupts import TurnInterrupted, interrupt_is_fresh
from processes.lane.journal import ANNOUNCED
from processes.lane.worker import is_stopping
from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.queries import has_work, load_process, next_pendings
from processes.recovery import expire_if_stale, remove_abandoned_spawns
from processes.states import WAKE_ON_MESSAGE, Call, CloseReason, Status
from protocol.outbound import Event, NotificationEvent, event
from sessions_app.events import emit_events
from vancetope.dispatch import send_robust_logged
from vancetope.llm.base import LlmError
from vancetope.llm.factory import LlmConfigError
from vancetope.observability import logs
from vancetope.redact import redact
from vancetope.tools.errors import AwaitingExternal, ClientToolRequired
from vancetope.tools.replay import UncertainCall

log = logging.getLogger(__name__)

# Attempts of one pending message before the process is closed FAILED.
MAX_TURN_ATTEMPTS = 3
# Parent reports one turn of an engine that coalesces them steers at most.
COALESCED_REPORTS = 16


def typed(message: PendingMessage) -> messages.PendingMessage:
    return messages.parse(message.kind, message.seq, message.payload)


def prepare(
    engine: ThinkEngine,
    process: ThinkProcess,
    keeper: lanes.LeaseKeeper,
    run: Run | None = None,
    message: PendingMessage | None = None,
) -> Prepared:
    return build_context(
        engine,
        process,
        keeper,
        queue_turn=lambda text: queue_own_turn(process.pk, text),
        opening=run.start if run is not None and not run.started else None,
        message=message,
    )


def drive_lane(process_id: int, held: lanes.Lease | None = None) -> int:
    """Drain the process's pending messages in sequence order. Returns the number of turns
    run. If another worker holds the lane this returns at once: the holder looks for new
    messages before it lets go. `held`: the lane, already taken by the caller (a child's
    start, which drives its first turn right away), with the process as it left it."""
    turns = 0
    while not is_stopping():
        lease, held = held or lanes.try_acquire(process_id), None
        if lease is None:
            return turns
        try:
            with lanes.holding(lease) as keeper, logs.bound(observe.facts_of(lease)):
                turns += _drain(process_id, keeper)
                if lease.compact_due and not lease.released:
                    # The conversation came near its window: its oldest turns are folded now,
                    # in the lane the last commit kept for it (a message sent meanwhile
                    # found the lane taken: looked for below).
                    compact(process_id, keeper)
        except lanes.LeaseLost:
            log.warning("lane tp_%s: lease lost mid-turn; nothing written", process_id)
            return turns
        # A lane let go by the commit that found no more work needs no second look: a message
        # sent after that commit woke the lane itself. One kept for a compaction looks for the
        # messages sent meanwhile, which found it taken.
        if (lease.released and not lease.compact_due) or not has_work(process_id):
            return turns
    if held is not None:
        lanes.release(held)  # stopping: the lane handed over is let go unused
    return turns


def _drain(process_id: int, keeper: lanes.LeaseKeeper) -> int:
    """Run turns on the pending messages until none is left, an interrupt arrives or the
    engine ends the process. The commit of the last turn also ends the run (status and lane)."""
    lease = keeper.lease
    process = lease.process or load_process(process_id)
    if process.status not in WAKE_ON_MESSAGE:
        return 0
    if interrupt_is_fresh(process.interrupt, process.interrupt_at):
        return 0
    if expire_if_stale(process, lease):
        return 0
    engine = engine_of(process)
    # An engine that takes several reports in one turn reads them with each commit's read.
    limit = COALESCED_REPORTS if engine.coalesce_reports else 1
    messages = next_pendings(process_id, limit)
    if not messages:
        return 0
    run = Run(process, lease)
    turns = 0
    failures = 0
    facts = logs.facts()
    while messages:
        message = messages[0]
        waiting = quotas.set_aside_before(process, message)
        if waiting is not None:
            # A continuation set this task aside and nothing else is left: it waits as a task
            # that stopped at its client tool would (not run again for the same answer).
            process.last_error = waiting
            _leave_run(process, lease, run, _waiting_notice(process), Status.BLOCKED)
            return turns
        with observe.TurnWatch(process, message, facts) as watch:
            if not turns and not failures:
                watch.woken()
            prepared = prepare(engine, process, keeper, run, message)
            prepared.events.skip_repeats(announced_for(message))
            if not failures:  # a retry keeps the state as it was before the first attempt
                snapshot = snapshots.before_turn(process, message, prepared.params_found)
            steered: list[PendingMessage] = []
            try:
                _steer(engine, process, prepared, messages, steered)
            except TurnInterrupted:
                watch.outcome = "interrupted"
                _forget_spawned(prepared)
                break
            except lanes.LeaseLost:
                watch.outcome = "lease_lost"
                raise
            except ClientToolRequired as needed:
                # Not retried: the task waits, its message pending, until a client is bound.
                watch.outcome = "blocked"
                _forget_spawned(prepared)
                if quotas.goes_past_client_tool(process, message):
                    # A continuation told not to stop here goes on with the other tasks.
                    quotas.set_aside(process, lease, message, needed.reason)
                    messages = next_pendings(process_id, limit)
                    continue
                process.last_error = needed.reason
                _leave_run(process, lease, run, _waiting_notice(process), Status.BLOCKED)
                return turns
            except UncertainCall as uncertain:
                # Not retried until its person decides: the message stays pending.
                watch.outcome = "blocked"
                _ask_about(process, lease, run, prepared, message, uncertain)
                return turns
            except AwaitingExternal as wait:
                # await_external: the turn so far is committed, and the process waits BLOCKED.
                prepared.ctx.block_on_external(wait.key, str(wait))
            except BudgetExceeded as exc:
                # Not retried: the budget stays used up. What the turn's earlier calls spent is
                # counted although the turn is not committed: the tokens were spent all the same.
                watch.failed("budget", exc)
                log.warning("lane %s: %s", process.public_id, exc.message)
                process.last_error = exc.message
                _fail(process, lease, run, spent(process, prepared.ctx.usage))
                return turns
            except Exception as exc:
                watch.failed("failed", exc)
                _forget_spawned(prepared)
                failures += 1
                log.exception("lane %s: turn on message #%s failed", process.public_id, message.seq)
                remember_announced(message, prepared.events.announced)
                # Shown to the session's members: no credentials of a URL an error names.
                process.last_error = redact(f"{type(exc).__name__}: {exc}")
                refused = isinstance(exc, LlmError) and _refused_for_good(exc)
                if refused or failures >= MAX_TURN_ATTEMPTS:
                    if isinstance(exc, LlmError):
                        _wait_for_provider(process, lease, run, refused)
                    else:
                        _fail(process, lease, run)
                    return turns
                if isinstance(exc, LlmError):
                    _back_off(failures)
                continue
            failures = 0
            turns += 1
            messages = commit_turn(process, lease, prepared, steered, run.wake, snapshot, limit)
    if process.status == Status.RUNNING:
        # Interrupted between deltas: the message stays pending, the caller gets the lane.
        with transaction.atomic():
            events = [lease_transition(process, lease, Call.TURN_END, Status.IDLE)]
            if run.wake is not None:
                events += wake_listeners.committed(run.wake, Status.IDLE, "")
            emit_events(process.session_id, events)
    elif run.started:
        report_to_parent(process, process.status, process.close_reason, delivered=lease.reported)
    return turns


def _steer(
    engine: ThinkEngine,
    process: ThinkProcess,
    prepared: Prepared,
    messages: list[PendingMessage],
    steered: list[PendingMessage],
) -> None:
    """One turn: `steer` on the first message; an engine that coalesces reports also steers
    the parent reports that follow a report, while it has not decided the process's fate.
    What it steered is in `steered` (the message that raised too). If a later report fails,
    the process's state is put back as the turn found it, for the retry."""
    state, params = process.engine_state, prepared.params_found
    for message in messages:
        if steered and (
            message.kind != PendingKind.PARENT_REPORT
            or steered[-1].kind != PendingKind.PARENT_REPORT
            or prepared.ctx.outcome is not None
        ):
            return
        steered.append(message)
        try:
            engine.steer(process, prepared.ctx, typed(message))
        except BaseException:  # a failure or a TurnControl: the retry starts from here
            if len(steered) > 1:
                process.engine_state, process.engine_params = state, copy.deepcopy(params)
            raise


def _ask_about(
    process: ThinkProcess,
    lease: lanes.Lease,
    run: Run,
    prepared: Prepared,
    message: PendingMessage,
    uncertain: UncertainCall,
) -> None:
    """A call that may have run before the Brain stopped, which may not run again blindly:
    BLOCKED, saying so, and its person is asked (inbox/receivers.py posts the APPROVAL)."""
    _forget_spawned(prepared)
    remember_announced(message, prepared.events.announced)
    process.last_error = uncertain.question
    _leave_run(process, lease, run, _waiting_notice(process), Status.BLOCKED)
    send_robust_logged(
        signals.call_uncertain,
        ThinkProcess,
        process.public_id,
        process=process,
        call=uncertain.call,
    )


def _forget_spawned(prepared: Prepared) -> None:
    """The children an attempt spawned that will not commit: gone before the next attempt
    (or the resumed turn) spawns its own."""
    if prepared.children.spawned:
        remove_abandoned_spawns(timezone.now(), prepared.children.spawned)
        prepared.children.spawned.clear()


def announced_for(message: PendingMessage) -> list[Event]:
    """What earlier, failed attempts at this message sent at once (remember_announced)."""
    return [(str(name), dict(data)) for name, data in message.payload.get(ANNOUNCED, [])]


def remember_announced(message: PendingMessage, announced: list[Event]) -> None:
    """Keep, with the message, what its failed attempt sent at once, so no later attempt (in
    this run or after a resume) sends it twice: a retried turn emits nothing twice."""
    if not announced or announced == announced_for(message):
        return
    message.payload = {**message.payload, ANNOUNCED: [[name, data] for name, data in announced]}
    PendingMessage.objects.filter(pk=message.pk).update(payload=message.payload)


def _fail(
    process: ThinkProcess, lease: lanes.Lease, run: Run, changes: dict[str, Any] | None = None
) -> None:
    """The same message failed MAX_TURN_ATTEMPTS times (or a budget broke): CLOSED/FAILED, the
    parent hears, and the process's open children are stopped (nobody reads their reports)."""
    notice = _failure_notice(process)
    _leave_run(process, lease, run, notice, Status.CLOSED, CloseReason.FAILED, changes)
    lifecycle.cascade_to_children(process.pk, Call.STOP)


# HTTP 4xx answers that a later try may not get: timeout, conflict, rate limit.
RETRYABLE_CLIENT_ERRORS = frozenset({408, 409, 429})


def _refused_for_good(exc: LlmError) -> bool:
    """The provider answered a 4xx no retry can fix (a bad key, an unknown model): the SDKs'
    status errors carry `status_code`, and the providers raise LlmError from them."""
    if isinstance(exc, LlmConfigError):
        return True  # the provider's settings are wrong (no key): fixed only by fixing them
    status = getattr(exc.__cause__, "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in RETRYABLE_CLIENT_ERRORS


def _back_off(failures: int) -> None:
    """Wait before the next attempt on a provider that failed: VANCETOPE_TURN_RETRY_SECONDS,
    doubled per failure. The lease is kept alive meanwhile by its keeper."""
    delay = settings.VANCETOPE_TURN_RETRY_SECONDS * 2 ** (failures - 1)
    deadline = time.monotonic() + delay
    while not is_stopping() and time.monotonic() < deadline:
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def _wait_for_provider(
    process: ThinkProcess, lease: lanes.Lease, run: Run, refused: bool = False
) -> None:
    """The LLM provider failed every attempt (or refused the request for good): never terminal
    for the process. It goes BLOCKED with the provider's error, its messages still pending;
    `process-resume` (or the next message) tries again, and its parent hears that it waits,
    and why."""
    if refused:
        process.last_error = (
            f"{messages.PROVIDER_FAILED}it refused the request, and trying again will not help "
            f"until the provider's settings (API key, model name) are fixed: {process.last_error}"
        )
    else:
        process.last_error = f"{messages.PROVIDER_FAILED}{process.last_error}"
    notice = NotificationEvent(
        text=f"{process.public_id} is waiting: {process.last_error}. Its messages are kept; "
        "send process-resume (or another message) to try again.",
        level="warning",
    )
    _leave_run(process, lease, run, event(notice), Status.BLOCKED)


def _leave_run(
    process: ThinkProcess,
    lease: lanes.Lease,
    run: Run,
    notice: Event,
    to_status: Status,
    reason: str = "",
    changes: dict[str, Any] | None = None,
) -> None:
    """End a run whose turn could not be committed, in one transaction (RUNNING first if the
    run had not stored anything yet, the notice, the new status, the lane let go), then tell
    the parent. The lane goes with the commit, as a committed turn's does: a message sent once
    the client has seen the new status finds it free and wakes it (let go only after the
    parent and the listeners of process_settled had been told, such a message found it taken
    and nobody looked for it)."""
    with transaction.atomic():
        events = run.start()
        events.append(notice)
        ended = lease_transition(
            process, lease, Call.TURN_END, to_status, reason, release=True, changes=changes
        )
        events.append(ended)
        if run.wake is not None:
            events += wake_listeners.committed(run.wake, to_status, reason)
        emit_events(process.session_id, events)
    lease.released = True
    report_to_parent(process, to_status, reason)


def _waiting_notice(process: ThinkProcess) -> Event:
    text = f"{process.public_id} is blocked: {process.last_error}"
    return event(NotificationEvent(text=text, level="warning"))


def _failure_notice(process: ThinkProcess) -> Event:
    text = f"{process.public_id} failed: {process.last_error}"
    return event(NotificationEvent(text=text, level="error"))


class Run:
    """A lane's run over pending messages. RUNNING is written with the first thing the run
    stores (its first events, or its first commit), so starting a turn costs no transaction
    of its own; the commit that finds no more work ends the run."""

    def __init__(self, process: ThinkProcess, lease: lanes.Lease) -> None:
        self.process = process
        self.lease = lease
        self.started = False
        # What the wake_committed receivers hear of this run (set when it moves to RUNNING).
        self.wake: wake_listeners.Wake | None = None

    def start(self) -> list[Event]:
        """Inside a transaction: move to RUNNING unless done; returns the status event to
        store in that same transaction, ahead of the run's other events."""
        if self.started:
            return []
        # Its start is taken before the move is recorded, so that the move falls in the wake.
        started_at = timezone.now()
        woke_from = str(self.process.status)
        event = lease_transition(self.process, self.lease, Call.TURN, Status.RUNNING)
        self.started = True
        self.wake = wake_listeners.Wake(self.process, started_at, woke_from=woke_from)
        return [event]
