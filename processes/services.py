"""The lifecycle service: the only code that changes a process's status.

Consumers, REST views, admin actions and Celery tasks call these functions and nothing else.
Each public call checks the transition table first (409, nothing changed), then takes the
process's lane, calls the engine with a fresh context, and commits the engine's work and the
new status in one fenced transaction.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from engines.base import ThinkEngine
from engines.context import (
    ConversationBuffer,
    EventSink,
    LlmAccess,
    ThinkEngineContext,
    TurnUsage,
)
from engines.registry import get_engine, is_compatible
from processes import lanes
from processes.dispatch import wake_lane
from processes.models import (
    ConversationMessage,
    PendingKind,
    PendingMessage,
    ProcessTransition,
    ThinkProcess,
)
from processes.states import (
    TURN_OUTCOMES,
    WAKE_ON_MESSAGE,
    Call,
    CloseReason,
    Status,
    check_call,
)
from processes.worker import is_stopping
from recipes_app.services import resolve_recipe
from sessions_app.events import emit_event, emit_events
from sessions_app.models import Session, SessionStatus
from vancetope import fastsql
from vancetope.errors import Conflict, NotFound, Unavailable
from vancetope.llm.factory import get_provider
from vancetope.tools.dispatch import ToolBox

log = logging.getLogger(__name__)

# An interrupt older than this is ignored: its caller gave up waiting long ago.
INTERRUPT_TTL = timedelta(minutes=2)
# How often a running turn looks at the database for interrupts and lease loss.
BOUNDARY_CHECK_SECONDS = 0.2
# A pending message older than this on an idle lane lost its wake-up: the sweeper wakes it.
LOST_WAKE_AFTER = timedelta(seconds=5)
# Attempts of one pending message before the process is closed FAILED.
MAX_TURN_ATTEMPTS = 3


class TurnInterrupted(Exception):
    """A pause, suspend or stop (or shutdown) arrived: leave the turn at this boundary."""


# --- queries -------------------------------------------------------------------------------------


def visible_processes(user: Any) -> QuerySet[ThinkProcess]:
    """Processes of the user's own sessions; service processes are not listed to users."""
    if not user.is_authenticated:
        return ThinkProcess.objects.none()
    return (
        ThinkProcess.objects.filter(session__owner=user)
        .exclude(recipe_snapshot__category="service")
        .select_related("session", "parent")
    )


def is_visible(process: ThinkProcess, user: Any) -> bool:
    """The rule of `visible_processes` for one loaded process (with its session)."""
    return (
        user.is_authenticated
        and process.session.owner_id == user.pk
        and process.recipe_snapshot.get("category") != "service"
    )


def get_visible_process(user: Any, process_id: int) -> ThinkProcess:
    process = visible_processes(user).filter(pk=process_id).first()
    if process is None:
        raise NotFound(f"process tp_{process_id} not found")
    return process


def pending_count(process_id: int) -> int:
    process = ThinkProcess.objects.only("next_pending_seq", "consumed_count").get(pk=process_id)
    return process.waiting


# --- creating ------------------------------------------------------------------------------------


def create_process(
    session: Session,
    *,
    goal: str = "",
    engine: str | None = None,
    recipe: str | None = None,
    params: dict[str, Any] | None = None,
    parent: ThinkProcess | None = None,
    start: bool = True,
) -> ThinkProcess:
    """Spawn a process in the session from a recipe (named, or by the engine-name convention)."""
    if session.status != SessionStatus.OPEN:
        raise Conflict(f"session {session.public_id} is {session.status}")
    if parent is not None and parent.session_id != session.pk:
        raise NotFound(f"parent process {parent.public_id} not found in {session.public_id}")
    chosen = resolve_recipe(session.project, recipe=recipe, engine=engine)
    engine_impl = get_engine(chosen.engine)
    if engine_impl is None:
        raise NotFound(f"think engine {chosen.engine!r} is not registered")
    now = timezone.now()
    process = ThinkProcess.objects.create(
        session=session,
        parent=parent,
        think_engine=engine_impl.name,
        engine_version=engine_impl.version,
        goal=goal,
        recipe_name=chosen.name,
        recipe_snapshot=chosen.snapshot(),
        engine_params={**chosen.params, **(params or {})},
        created_at=now,
        updated_at=now,
    )
    if start:
        return start_process(process.pk)
    return process


# --- lifecycle calls -----------------------------------------------------------------------------


def start_process(process_id: int) -> ThinkProcess:
    return _lifecycle(process_id, Call.START)


def pause_process(process_id: int) -> ThinkProcess:
    return _lifecycle(process_id, Call.PAUSE)


def resume_process(process_id: int) -> ThinkProcess:
    return _lifecycle(process_id, Call.RESUME)


def suspend_process(process_id: int) -> ThinkProcess:
    return _lifecycle(process_id, Call.SUSPEND)


def stop_process(process_id: int) -> ThinkProcess:
    return _lifecycle(process_id, Call.STOP)


def reset_process(process_id: int) -> ThinkProcess:
    return _lifecycle(process_id, Call.RESET)


def _load(process_id: int) -> ThinkProcess:
    """The process with its session."""
    found = fastsql.select(ThinkProcess, "id = %s", [process_id])
    if not found:
        raise NotFound(f"process tp_{process_id} not found")
    process = found[0]
    process.session = fastsql.select(Session, "id = %s", [process.session_id])[0]
    return process


def _check_session_allows(process: ThinkProcess, call: Call) -> None:
    """A closed session's processes stay closed: only stop (a no-op there) gets through."""
    if call is not Call.STOP and process.session.status == SessionStatus.CLOSED:
        raise Conflict(
            f"cannot {call.value} process {process.public_id}: "
            f"its session {process.session.public_id} is CLOSED"
        )


def _lifecycle(process_id: int, call: Call) -> ThinkProcess:
    process = _load(process_id)
    check_call(call, process.status, process.close_reason, label=process.public_id)
    _check_session_allows(process, call)
    if call is not Call.STOP and expire_if_stale(process):
        raise Conflict(
            f"process {process.public_id} is CLOSED/STALE: engine {process.think_engine} "
            f"{process.engine_version} is no longer available"
        )
    interrupting = call in {Call.PAUSE, Call.SUSPEND, Call.STOP}
    if interrupting:
        _request_interrupt(process, call)
    try:
        lease = lanes.acquire(process_id, wait=settings.VANCETOPE_LIFECYCLE_WAIT_SECONDS)
        if lease is None:
            raise Unavailable(f"process {process.public_id} is busy; try again")
        with _holding(lease) as keeper:
            process = _load(process_id)
            rule = check_call(call, process.status, process.close_reason, label=process.public_id)
            engine = _engine_of(process)
            ctx = _build_context(process, keeper)
            from_status = process.status
            if call is Call.RESET:
                process.engine_state = {}
            else:
                getattr(engine, call.value)(process, ctx)
            to_status, reason = rule.to, ""
            if call is Call.STOP:
                reason = CloseReason.STOPPED
            if call is Call.START and ctx.outcome is not None:
                to_status, reason = ctx.outcome, ctx.close_reason or ""
            assert to_status is not None
            _commit(
                process, lease, ctx, call, from_status, to_status, reason, reset=call is Call.RESET
            )
    finally:
        if interrupting:
            ThinkProcess.objects.filter(pk=process_id, interrupt=call.value).update(
                interrupt="", interrupt_at=None
            )
    report_to_parent(process, process.status, process.close_reason)
    if process.status in WAKE_ON_MESSAGE and pending_count(process_id):
        wake_lane(process_id)
    return process


def _request_interrupt(process: ThinkProcess, call: Call) -> None:
    """Ask a running turn to stop at its next boundary, so this call gets the lane soon."""
    ThinkProcess.objects.filter(pk=process.pk).update(
        interrupt=call.value, interrupt_at=timezone.now()
    )


def _interrupt_is_fresh(interrupt: str, interrupt_at: Any) -> bool:
    return (
        bool(interrupt)
        and interrupt_at is not None
        and (timezone.now() - interrupt_at < INTERRUPT_TTL)
    )


# --- steering ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Steered:
    message: PendingMessage
    pending: int


def steer_process(
    process_id: int, text: str, kind: PendingKind = PendingKind.STEER, *, user: Any = None
) -> Steered:
    """Append a pending message; wake the lane unless the process waits for resume. With
    `user`, a process the user may not see is not found (and nothing changes)."""
    return steer_many(process_id, [text], kind, user=user)[0]


def steer_many(
    process_id: int,
    texts: list[str],
    kind: PendingKind = PendingKind.STEER,
    *,
    user: Any = None,
    chat_session: int | None = None,
) -> list[Steered]:
    """Append several pending messages in order, in one transaction: all or none (a burst
    of steers from one socket costs one transaction, not one each). `chat_session`: they are
    the chat of this session's client, so the process must be its chat process and the session
    OPEN."""
    with transaction.atomic():
        # A refusal below rolls back the seqs taken here. The session is locked after the
        # process (as a lane's commit locks them), its activity noted.
        process = _take_seqs(process_id, len(texts))
        if process is None:
            raise NotFound(f"process tp_{process_id} not found")
        [process.session] = fastsql.update_returning(
            Session, "id = %s", [process.session_id], {"last_activity_at": timezone.now()}
        )
        if user is not None and not is_visible(process, user):
            raise NotFound(f"process tp_{process_id} not found")
        session = process.session
        if chat_session is not None:
            if process.session_id != chat_session or session.chat_process_id != process_id:
                _chat_processes.pop(chat_session, None)
                raise Conflict(f"session sess_{chat_session} has no chat process")
            if session.status != SessionStatus.OPEN:
                raise Conflict(f"session {session.public_id} is {session.status}")
        check_call(Call.STEER, process.status, process.close_reason, label=process.public_id)
        _check_session_allows(process, Call.STEER)
        messages = _insert_pending(process, kind, [{"text": text} for text in texts])
        if process.status in WAKE_ON_MESSAGE:
            wake_lane(process_id)
    # Each steer's reply says how many were pending once it was appended.
    before = process.waiting - len(messages)
    return [Steered(message, before + n) for n, message in enumerate(messages, start=1)]


def send_chat(session_id: int, text: str) -> Steered:
    """A chat message from the session's client goes to the session's chat process."""
    process_id = _chat_process_of(session_id)
    if process_id is None:
        raise Conflict(f"session sess_{session_id} has no chat process")
    [steered] = steer_many(process_id, [text], PendingKind.USER, chat_session=session_id)
    return steered


# --- the lane ------------------------------------------------------------------------------------


def drive_lane(process_id: int) -> int:
    """Drain the process's pending messages in sequence order; the body of the lane task.

    Returns the number of turns run. If another worker holds the lane this returns at once:
    the holder looks for new messages before it lets go.
    """
    turns = 0
    while not is_stopping():
        lease = lanes.try_acquire(process_id)
        if lease is None:
            return turns
        try:
            with _holding(lease) as keeper:
                turns += _drain(process_id, keeper)
        except lanes.LeaseLost:
            log.warning("lane tp_%s: lease lost mid-turn; nothing written", process_id)
            return turns
        # A lane let go by the commit that found no more work needs no second look: a message
        # sent after that commit woke the lane itself.
        if lease.released or not _has_work(process_id):
            return turns
    return turns


def _has_work(process_id: int) -> bool:
    row = (
        ThinkProcess.objects.filter(pk=process_id)
        .values("status", "interrupt", "interrupt_at")
        .first()
    )
    if row is None or row["status"] not in WAKE_ON_MESSAGE:
        return False
    if _interrupt_is_fresh(row["interrupt"], row["interrupt_at"]):
        return False
    return PendingMessage.objects.filter(process_id=process_id, consumed=False).exists()


def _next_pending(process_id: int, *, unless_interrupted: bool = False) -> PendingMessage | None:
    """The process's next pending message; with `unless_interrupted`, none while a fresh
    interrupt waits (checked in the same statement)."""
    where = "process_id = %s AND consumed = %s"
    params: list[Any] = [process_id, False]
    if unless_interrupted:
        where += (
            f" AND NOT EXISTS (SELECT 1 FROM {fastsql.table(ThinkProcess)} "
            "WHERE id = %s AND interrupt <> '' AND interrupt_at > %s)"
        )
        fresh_after = timezone.now() - INTERRUPT_TTL
        params += [process_id, connection.ops.adapt_datetimefield_value(fresh_after)]
    found = fastsql.select(PendingMessage, where, params, tail="ORDER BY seq LIMIT 1")
    return found[0] if found else None


@contextmanager
def _holding(lease: lanes.Lease) -> Iterator[lanes.LeaseKeeper]:
    """Keep the lease alive while the block runs, then let the lane go."""
    try:
        with lanes.LeaseKeeper(lease) as keeper:
            yield keeper
    finally:
        if not lease.released:
            lanes.release(lease)


def _drain(process_id: int, keeper: lanes.LeaseKeeper) -> int:
    """Run turns on the pending messages until none is left, an interrupt arrives or the
    engine ends the process. The commit of the last turn also ends the run (status and lane)."""
    lease = keeper.lease
    process = lease.process or _load(process_id)
    if process.status not in WAKE_ON_MESSAGE:
        return 0
    if _interrupt_is_fresh(process.interrupt, process.interrupt_at):
        return 0
    if expire_if_stale(process, lease):
        return 0
    message = _next_pending(process_id)
    if message is None:
        return 0
    engine = _engine_of(process)
    run = _Run(process, lease)
    turns = 0
    failures = 0
    while message is not None:
        ctx = _build_context(process, keeper, run)
        try:
            engine.steer(process, ctx, message)
        except TurnInterrupted:
            break
        except lanes.LeaseLost:
            raise
        except Exception as exc:
            failures += 1
            log.exception("lane %s: turn on message #%s failed", process.public_id, message.seq)
            process.last_error = f"{type(exc).__name__}: {exc}"
            if failures >= MAX_TURN_ATTEMPTS:
                _notify(process, f"{process.public_id} failed: {process.last_error}", "error")
                with transaction.atomic():
                    events = run.start()
                    events.append(
                        _change_status(
                            process,
                            lease,
                            Call.TURN_END,
                            Status.CLOSED,
                            CloseReason.FAILED,
                            timezone.now(),
                            emit=False,
                        )
                    )
                    emit_events(process.session_id, events)
                report_to_parent(process, Status.CLOSED, CloseReason.FAILED)
                return turns
            continue
        failures = 0
        turns += 1
        message = _commit_turn(process, lease, ctx, message)
    if process.status == Status.RUNNING:
        # Interrupted between deltas: the message stays pending, the caller gets the lane.
        _set_status(process, lease, Call.TURN_END, Status.IDLE)
    elif run.started:
        report_to_parent(process, process.status, process.close_reason)
    return turns


class _Run:
    """A lane's run over pending messages. RUNNING is written with the first thing the run
    stores (its first events, or its first commit), so starting a turn costs no transaction
    of its own; the commit that finds no more work ends the run."""

    def __init__(self, process: ThinkProcess, lease: lanes.Lease) -> None:
        self.process = process
        self.lease = lease
        self.started = False

    def start(self) -> list[tuple[str, dict[str, Any]]]:
        """Inside a transaction: move to RUNNING unless done; returns the status event to
        store in that same transaction, ahead of the run's other events."""
        if self.started:
            return []
        now = timezone.now()
        event = _change_status(
            self.process, self.lease, Call.TURN, Status.RUNNING, "", now, emit=False
        )
        self.started = True
        return [event]


# --- context and commits -------------------------------------------------------------------------


def _engine_of(process: ThinkProcess) -> ThinkEngine:
    engine = get_engine(process.think_engine)
    if engine is None:
        raise Conflict(f"think engine {process.think_engine!r} is not registered")
    return engine


def _build_context(
    process: ThinkProcess, keeper: lanes.LeaseKeeper, run: _Run | None = None
) -> ThinkEngineContext:
    engine = _engine_of(process)
    events = EventSink(
        process.session_id,
        process,
        settings.VANCETOPE_DELTA_INTERVAL_SECONDS,
        opening=run.start if run is not None and not run.started else None,
    )
    usage = TurnUsage()
    snapshot = process.recipe_snapshot
    engine_settings = {
        **engine.default_settings,
        **snapshot.get("params", {}),
        **process.engine_params,
        "promptPrefix": snapshot.get("promptPrefix", ""),
    }
    boundary = _Boundary(keeper)
    conversation = ConversationBuffer(process)
    return ThinkEngineContext(
        process=process,
        llm=LlmAccess(get_provider(), events, usage, boundary),
        conversation=conversation,
        events=events,
        settings=engine_settings,
        usage=usage,
        is_chat_process=_chat_process_of(process.session_id) == process.pk,
        tools=ToolBox(process, engine.allowed_tools, boundary, conversation, events),
        queue_turn=lambda text: queue_own_turn(process.pk, text),
    )


# Session id → its chat process. A session's chat process is set once, when the session is
# created, and never changes, so a lane need not read the session row for it every turn.
_chat_processes: dict[int, int] = {}
CHAT_PROCESS_CACHE = 10_000


def _chat_process_of(session_id: int) -> int | None:
    found = _chat_processes.get(session_id)
    if found is None:
        found = fastsql.scalar(
            f"SELECT chat_process_id FROM {fastsql.table(Session)} WHERE id = %s", [session_id]
        )
        if found is not None:
            if len(_chat_processes) >= CHAT_PROCESS_CACHE:
                _chat_processes.clear()
            _chat_processes[session_id] = found
    return found


def _take_seqs(process_id: int, count: int, *, unless_closed: bool = False) -> ThinkProcess | None:
    """Take the process's next `count` pending seqs, in one statement that also locks its row
    until the transaction ends; the process as that left it (the seqs taken end just below its
    `next_pending_seq`), or None if there is no such process (with `unless_closed`, no such
    process that is not CLOSED)."""
    where = "id = %s"
    params: list[Any] = [process_id]
    if unless_closed:
        where += " AND status <> %s"
        params.append(Status.CLOSED)
    found = fastsql.update_returning(
        ThinkProcess, where, params, {"next_pending_seq": fastsql.Add(count)}
    )
    return found[0] if found else None


def _insert_pending(
    process: ThinkProcess, kind: PendingKind, payloads: list[dict[str, Any]]
) -> list[PendingMessage]:
    """Store pending messages with the seqs just taken for them (see _take_seqs)."""
    first = process.next_pending_seq - len(payloads)
    messages = [
        PendingMessage(process_id=process.pk, seq=first + n, kind=kind, payload=payload)
        for n, payload in enumerate(payloads)
    ]
    fastsql.insert(messages, returning_pk=True)
    return messages


def queue_own_turn(process_id: int, text: str) -> None:
    """A CONTROL message from the process to itself, appended under its own lane (so without
    the steer status check): the lane drains it after the current lifecycle call."""
    with transaction.atomic():
        process = _take_seqs(process_id, 1)
        assert process is not None
        _insert_pending(process, PendingKind.CONTROL, [{"text": text}])


# Statuses (or close reasons) a parent hears about, as the event name its engine summarises.
REPORTED_TO_PARENT = {Status.BLOCKED, CloseReason.DONE, CloseReason.STOPPED, CloseReason.FAILED}


def report_to_parent(process: ThinkProcess, status: str, reason: str) -> PendingMessage | None:
    """A child reached DONE, BLOCKED, STOPPED or FAILED: its engine's summary becomes a
    PARENT_REPORT pending message of the parent, which wakes it (ARCHITECTURE §4). A report
    to a PAUSED or SUSPENDED parent waits for its resume; a CLOSED parent hears nothing."""
    event = reason if status == Status.CLOSED else status
    if process.parent_id is None or event not in REPORTED_TO_PARENT:
        return None
    engine = get_engine(process.think_engine)
    if engine is None:
        return None
    report = engine.summarize_for_parent(process, event)
    payload = {
        "text": report.human_summary,
        "childId": process.public_id,
        "event": event,
        "payload": report.payload,
    }
    with transaction.atomic():
        parent = _take_seqs(process.parent_id, 1, unless_closed=True)
        if parent is None:
            log.info(
                "%s: parent tp_%s is gone or closed; report dropped",
                process.public_id,
                process.parent_id,
            )
            return None
        [message] = _insert_pending(parent, PendingKind.PARENT_REPORT, [payload])
        if parent.status in WAKE_ON_MESSAGE:
            wake_lane(process.parent_id)
    return message


class _Boundary:
    """Called by the context between LLM deltas: stop when asked or when the lease is gone."""

    def __init__(self, keeper: lanes.LeaseKeeper) -> None:
        self._keeper = keeper
        self._lease = keeper.lease
        # Between messages the lane looks for interrupts itself; inside a turn, first after
        # one interval, then once per interval.
        self._next_check = time.monotonic() + BOUNDARY_CHECK_SECONDS

    def __call__(self) -> None:
        if self._keeper.lost.is_set():
            raise lanes.LeaseLost(f"lease on tp_{self._lease.process_id} lost")
        if is_stopping():
            raise TurnInterrupted("the worker is shutting down")
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + BOUNDARY_CHECK_SECONDS
        row = self._lease.fenced().values("interrupt", "interrupt_at").first()
        if row is None:
            raise lanes.LeaseLost(f"lease on tp_{self._lease.process_id} lost")
        if _interrupt_is_fresh(row["interrupt"], row["interrupt_at"]):
            raise TurnInterrupted(row["interrupt"])


def _append_conversation(process: ThinkProcess, ctx: ThinkEngineContext) -> int:
    new = ctx.conversation.new_messages
    start = process.conversation_length
    fastsql.insert(
        [
            ConversationMessage(
                process_id=process.pk,
                index=start + offset,
                role=message.role,
                content=message.content,
                tool_calls=[
                    {"id": call.id, "name": call.name, "arguments": call.arguments}
                    for call in message.tool_calls
                ],
                tool_call_id=message.tool_call_id,
            )
            for offset, message in enumerate(new)
        ]
    )
    return len(new)


def _commit_turn(
    process: ThinkProcess, lease: lanes.Lease, ctx: ThinkEngineContext, message: PendingMessage
) -> PendingMessage | None:
    """Store the turn's messages, usage, engine state and events, and consume the pending
    message, in one transaction that holds only if our lease does.

    Returns the next message to run. When there is none (or an interrupt is waiting, or the
    engine ended the process), the same transaction ends the run: the process leaves RUNNING
    and the lane is let go."""
    now = timezone.now()
    with transaction.atomic():
        ctx.events.open()
        added = _append_conversation(process, ctx)
        updated = lease.update(
            {
                "engine_state": process.engine_state,
                "conversation_length": fastsql.Add(added),
                "consumed_count": fastsql.Add(1),
                "prompt_tokens": fastsql.Add(ctx.usage.prompt_tokens),
                "completion_tokens": fastsql.Add(ctx.usage.completion_tokens),
                "last_error": "",
                "updated_at": now,
                "lease_expires_at": now + timedelta(seconds=lanes.lease_seconds()),
            }
        )
        if updated != 1:
            raise lanes.LeaseLost(f"lease on {process.public_id} lost before commit")
        consumed = fastsql.update(
            PendingMessage,
            "id = %s AND consumed = %s",
            [message.pk, False],
            {"consumed": True, "consumed_at": now, "consumed_fence": lease.fence},
        )
        if consumed != 1:
            raise lanes.LeaseLost(f"message #{message.seq} of {process.public_id} already consumed")
        # Read after our row update: a steer committed before it is seen here, one committed
        # after it wakes the lane itself once this transaction has let the lane go.
        upcoming = (
            None if ctx.outcome is not None else _next_pending(process.pk, unless_interrupted=True)
        )
        if upcoming is None:
            process.last_error = ""
            outcome = ctx.outcome or Status.IDLE
            assert outcome in TURN_OUTCOMES
            _end_run(process, lease, outcome, ctx.close_reason or "", now, ctx.events)
        ctx.events.flush()
    process.conversation_length += added
    process.consumed_count += 1
    ctx.conversation.remember_committed()
    process.prompt_tokens += ctx.usage.prompt_tokens
    process.completion_tokens += ctx.usage.completion_tokens
    process.last_error = ""
    lease.expires_at = now + timedelta(seconds=lanes.lease_seconds())
    return upcoming


def _commit(
    process: ThinkProcess,
    lease: lanes.Lease,
    ctx: ThinkEngineContext,
    call: Call,
    from_status: str,
    to_status: Status,
    reason: str,
    *,
    reset: bool = False,
) -> None:
    """Store a lifecycle call's outcome: engine work (if any) and the new status."""
    now = timezone.now()
    with transaction.atomic():
        if reset:
            ConversationMessage.objects.filter(process_id=process.pk).delete()
            process.conversation_length = 0
            added = 0
        else:
            added = _append_conversation(process, ctx)
        changes: dict[str, Any] = {
            "status": to_status,
            "close_reason": reason,
            "engine_state": process.engine_state,
            "updated_at": now,
            "prompt_tokens": F("prompt_tokens") + ctx.usage.prompt_tokens,
            "completion_tokens": F("completion_tokens") + ctx.usage.completion_tokens,
        }
        if reset:
            changes["conversation_length"] = 0
            changes["conversation_epoch"] = F("conversation_epoch") + 1
        else:
            changes["conversation_length"] = F("conversation_length") + added
        if call in {Call.RESUME, Call.RESET, Call.STOP}:
            # The user decided about a drifted process.
            changes["context_drift"] = False
        if lease.fenced().update(**changes) != 1:
            raise lanes.LeaseLost(f"lease on {process.public_id} lost before commit")
        ProcessTransition.objects.create(
            process=process,
            call=call,
            from_status=from_status,
            to_status=to_status,
            close_reason=reason,
        )
        ctx.events.flush()
        emit_event(process.session_id, "process-status", _status_data(process, to_status, reason))
    process.refresh_from_db()
    if added:
        ctx.conversation.remember_committed()


def _set_status(
    process: ThinkProcess, lease: lanes.Lease, call: Call, to_status: Status, reason: str = ""
) -> None:
    now = timezone.now()
    with transaction.atomic():
        _change_status(process, lease, call, to_status, reason, now)


def _end_run(
    process: ThinkProcess,
    lease: lanes.Lease,
    to_status: Status,
    reason: str,
    now: Any,
    events: EventSink,
) -> None:
    """Inside the last turn's commit: leave RUNNING and let the lane go (the status event
    goes out with the turn's other events)."""
    event = _change_status(
        process, lease, Call.TURN_END, to_status, reason, now, release=True, emit=False
    )
    events.emit_after_commit(*event)
    lease.released = True


def _change_status(
    process: ThinkProcess,
    lease: lanes.Lease,
    call: Call,
    to_status: Status,
    reason: str,
    now: Any,
    *,
    release: bool = False,
    emit: bool = True,
) -> tuple[str, dict[str, Any]]:
    """Move the process under its lease, with its transition row and status event (call
    inside a transaction). Returns the status event; `emit=False` leaves storing it to the
    caller, in the same transaction."""
    from_status = process.status
    check_call(call, from_status, process.close_reason, label=process.public_id)
    changes: dict[str, Any] = {
        "status": to_status,
        "close_reason": reason,
        "updated_at": now,
        "last_error": process.last_error,
    }
    if release:
        changes.update(lease_owner="", lease_expires_at=None)
    if lease.update(changes, "status = %s", [from_status]) != 1:
        raise lanes.LeaseLost(f"{process.public_id} changed under its lease")
    transition = ProcessTransition(
        process_id=process.pk,
        call=call,
        from_status=from_status,
        to_status=to_status,
        close_reason=reason,
        detail=process.last_error if reason == CloseReason.FAILED else "",
        at=now,
    )
    fastsql.insert([transition])
    event = ("process-status", _status_data(process, to_status, reason))
    if emit:
        emit_event(process.session_id, *event)
    process.status = to_status
    process.close_reason = reason
    return event


def _status_data(process: ThinkProcess, status: str, reason: str) -> dict[str, Any]:
    data: dict[str, Any] = {"processId": process.public_id, "status": status}
    if reason:
        data["closeReason"] = reason
    if process.context_drift:
        data["contextDrift"] = True
    return data


def _notify(process: ThinkProcess, text: str, level: str) -> None:
    emit_event(process.session_id, "notification", {"text": text, "level": level})


# --- staleness and recovery ----------------------------------------------------------------------


def expire_if_stale(process: ThinkProcess, lease: lanes.Lease | None = None) -> bool:
    """Close a process whose engine is gone or of another major version (CLOSED/STALE)."""
    if process.status == Status.CLOSED or is_compatible(
        process.think_engine, process.engine_version
    ):
        return False
    rows = ThinkProcess.objects.filter(pk=process.pk, status=process.status)
    if lease is not None:
        rows = rows.filter(lease_owner=lease.owner, lease_fence=lease.fence)
    with transaction.atomic():
        if (
            rows.update(
                status=Status.CLOSED, close_reason=CloseReason.STALE, updated_at=timezone.now()
            )
            != 1
        ):
            return True
        ProcessTransition.objects.create(
            process=process,
            call=Call.EXPIRE,
            from_status=process.status,
            to_status=Status.CLOSED,
            close_reason=CloseReason.STALE,
            detail=f"engine {process.think_engine} {process.engine_version} not available",
        )
        emit_event(
            process.session_id,
            "process-status",
            _status_data(process, Status.CLOSED, CloseReason.STALE),
        )
    process.status, process.close_reason = Status.CLOSED, CloseReason.STALE
    return True


@dataclass(frozen=True)
class RecoveryReport:
    recovered: int
    expired: int
    woken: int


def recover_processes() -> RecoveryReport:
    """At start: close stale processes, then recover every lane (see recover_lanes)."""
    expired = 0
    engines = ThinkProcess.objects.exclude(status=Status.CLOSED).values_list(
        "think_engine", "engine_version"
    )
    # Ten thousand processes use a handful of engine versions: check each version once and
    # load only the processes of the incompatible ones.
    for engine, version in engines.distinct().order_by():
        if is_compatible(engine, version):
            continue
        stale = ThinkProcess.objects.exclude(status=Status.CLOSED).filter(
            think_engine=engine, engine_version=version
        )
        for process in stale.select_related("session"):
            if expire_if_stale(process):
                expired += 1
    lanes_report = recover_lanes(min_pending_age=timedelta(0))
    return RecoveryReport(lanes_report.recovered, expired, lanes_report.woken)


# Processes brought back per statement by recover_lanes.
RECOVER_CHUNK = 500


def recover_lanes(min_pending_age: timedelta) -> RecoveryReport:
    """Bring back processes left RUNNING by a dead worker (lease expired, or its owner was a
    process on this host that no longer runs) to IDLE, and wake every wakeable process whose
    oldest pending message has waited longer than `min_pending_age` with nobody on its lane."""
    now = timezone.now()
    running = ThinkProcess.objects.filter(status=Status.RUNNING).values_list(
        "pk", "lease_owner", "lease_expires_at", "lease_fence"
    )
    # Owners are host:pid:thread:random; whether one is dead depends on its host and pid.
    dead_workers: dict[str, bool] = {}
    candidates = []
    owners: dict[int, str] = {}
    for pk, owner, expires_at, fence in running:
        worker = ":".join(owner.split(":", 2)[:2])
        if worker not in dead_workers:
            dead_workers[worker] = not owner or lanes.owner_is_dead(owner)
        if dead_workers[worker] or expires_at is None or expires_at < now:
            candidates.append((pk, fence))
            owners[pk] = owner
    recovered = 0
    for start in range(0, len(candidates), RECOVER_CHUNK):
        recovered += _recover_chunk(candidates[start : start + RECOVER_CHUNK], owners, now)
    waiting = (
        PendingMessage.objects.filter(
            consumed=False,
            created_at__lte=now - min_pending_age,
            process__status__in=WAKE_ON_MESSAGE,
        )
        .filter(Q(process__lease_owner="") | Q(process__lease_expires_at__lt=now))
        # Without order_by() the model's ordering (process, seq) joins the DISTINCT and every
        # message, not every process, would be woken.
        .order_by()
        .values_list("process_id", flat=True)
        .distinct()
    )
    woken = 0
    for process_id in waiting:
        wake_lane(process_id)
        woken += 1
    return RecoveryReport(recovered=recovered, expired=0, woken=woken)


def _recover_chunk(candidates: list[tuple[int, int]], owners: dict[int, str], now: Any) -> int:
    """RUNNING → IDLE for these (process, fence) pairs, in one transaction. A process whose
    fence moved was taken by a worker meanwhile (or by another sweeper) and is left alone."""
    pairs = " OR ".join(["(id = %s AND lease_fence = %s)"] * len(candidates))
    with transaction.atomic():
        taken = fastsql.update_returning(
            ThinkProcess,
            f"status = %s AND ({pairs})",
            [Status.RUNNING, *itertools.chain.from_iterable(candidates)],
            {
                "status": Status.IDLE,
                "lease_owner": "",
                "lease_expires_at": None,
                "updated_at": now,
            },
        )
        fastsql.insert(
            [
                ProcessTransition(
                    process_id=process.pk,
                    call="recover",
                    from_status=Status.RUNNING,
                    to_status=Status.IDLE,
                    detail=f"lease of {owners[process.pk] or '?'} ended",
                    at=now,
                )
                for process in taken
            ]
        )
        by_session: dict[int, list[tuple[str, dict[str, Any]]]] = {}
        for process in taken:
            by_session.setdefault(process.session_id, []).append(
                ("process-status", _status_data(process, Status.IDLE, ""))
            )
        for session_id, events in by_session.items():
            emit_events(session_id, events)
    return len(taken)
