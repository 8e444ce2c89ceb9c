"""Commits of the lane: a turn's work, or a lifecycle call's, in one fenced transaction.

A commit holds only while the lane's lease does: every write names the lease's fence, so a
worker that lost its lease writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from engines.context import TurnUsage
from processes import transitions
from processes.actions.pending import append_own_turns
from processes.actions.reports import deliver_with_commit
from processes.lane import lease as lanes
from processes.lane import quota as quotas
from processes.lane import snapshots, wake_listeners
from processes.lane.compaction import due as compaction_due
from processes.lane.context_builder import Prepared
from processes.lane.dispatch import start_later
from processes.lane.journal import stripped
from processes.models import ConversationMessage, PendingKind, PendingMessage, ThinkProcess
from processes.queries import next_pendings
from processes.states import TURN_OUTCOMES, Call, CloseReason, Status
from protocol.outbound import Event
from vancetope import failpoints
from vancetope.infra import fastsql


def estimated(usage: TurnUsage) -> dict[str, Any]:
    """The column that marks a process's tokens as partly estimated: set by a call whose
    server reported no usage, never cleared (a later exact count does not make the sum exact);
    left out of the statement otherwise."""
    return {"usage_estimated": True} if usage.estimated else {}


def spent(process: ThinkProcess, usage: TurnUsage) -> dict[str, Any]:
    """The row changes that count what a turn spent, for a turn that is not committed (a
    budget ended it): its tokens and calls are the tree's all the same."""
    process.prompt_tokens += usage.prompt_tokens
    process.completion_tokens += usage.completion_tokens
    process.llm_calls += usage.llm_calls
    process.usage_estimated = process.usage_estimated or usage.estimated
    return {
        "prompt_tokens": fastsql.Add(usage.prompt_tokens),
        "completion_tokens": fastsql.Add(usage.completion_tokens),
        "llm_calls": fastsql.Add(usage.llm_calls),
        **estimated(usage),
    }


def append_conversation(process: ThinkProcess, prepared: Prepared) -> int:
    rows = prepared.conversation.rows(process.conversation_length)
    fastsql.insert_values(ConversationMessage, rows)
    return len(rows)


def start_spawned(prepared: Prepared) -> None:
    """Inside the commit: the children this call spawned are to be started (autostart, so
    recovery starts them if the Brain stops first), each in its own lane once it commits."""
    spawned = prepared.children.spawned
    if spawned:
        ThinkProcess.objects.filter(pk__in=spawned, status=Status.INIT).update(
            autostart=True, uncommitted_spawn=False
        )
        start_later(spawned)


def ended_status(prepared: Prepared, default: Status) -> tuple[Status, str]:
    """The status (and close reason) the engine's decision asks for, or `default`."""
    ctx = prepared.ctx
    if ctx.outcome is None:
        return default, ""
    return Status(ctx.outcome), str(ctx.finish_reason or "")


def commit_turn(
    process: ThinkProcess,
    lease: lanes.Lease,
    prepared: Prepared,
    messages: list[PendingMessage],
    wake: wake_listeners.Wake | None = None,
    snapshot: dict[str, Any] | None = None,
    upcoming_limit: int = 1,
) -> list[PendingMessage]:
    """Store the turn's messages, usage, engine state (and params, if the engine changed
    them) and events, and consume the pending messages it steered (one, or several parent
    reports), in one transaction that holds only if our lease does. A person's message keeps,
    in the statement that consumes it, the `snapshot` an undo of its turn needs
    (processes/lane/snapshots.py).

    Returns the next messages to run (up to `upcoming_limit`, in order). When there is none
    (or an interrupt is waiting, or the engine ended the process), the same transaction ends
    the run: the process leaves RUNNING and the lane is let go. The wake's listeners hear of
    the commit in it (`wake`)."""
    failpoints.reach("turn-committing")
    ctx, events = prepared.ctx, prepared.events
    now = timezone.now()
    # A turn whose call came near its window keeps the lane past its run's end, for the
    # compaction that follows it (processes/lane/compaction.py): a message sent meanwhile
    # waits for it instead of racing it for the lane.
    lease.compact_due = lease.compact_due or compaction_due(ctx.usage.last_call)
    # A turn that commits clears the error of earlier failed attempts, or names its own.
    error = ctx.error if ctx.outcome is not None else ""
    # A bounded continuation counts this turn (one dict test for every other process).
    quota = quotas.active(process)
    counted: dict[str, Any] = {}
    if quota is not None:
        quota = quotas.counted(quota, ctx.usage.total, ctx.usage.llm_calls, process)
        counted["run_quota"] = quota
    with transaction.atomic():
        events.open()
        added = append_conversation(process, prepared)
        turn = {
            **counted,
            "engine_state": process.engine_state,
            **prepared.engine_params_changes(),
            "conversation_length": fastsql.Add(added),
            "consumed_count": fastsql.Add(len(messages)),
            "prompt_tokens": fastsql.Add(ctx.usage.prompt_tokens),
            "completion_tokens": fastsql.Add(ctx.usage.completion_tokens),
            "llm_calls": fastsql.Add(ctx.usage.llm_calls),
            **estimated(ctx.usage),
            "last_error": error,
            # Only when a call was assembled within a known window: the default chat's
            # statement (the scripted provider, no window) is unchanged.
            **({"last_call": ctx.usage.last_call} if ctx.usage.last_call is not None else {}),
            # Set when the turn blocks on an external key; any other turn clears it (written
            # only when it changes: the column is indexed, and an index is rewritten whenever
            # its column is set).
            **(
                {"blocked_by_external": ctx.external_key}
                if ctx.external_key != process.blocked_by_external
                else {}
            ),
            "updated_at": now,
            "lease_expires_at": now + timedelta(seconds=lanes.lease_seconds()),
        }
        ended = (
            quota is None
            and ctx.outcome is None
            and end_run_unless_more_waits(process, lease, prepared, turn, len(messages))
        )
        if not ended and lease.update(turn) != 1:
            raise lanes.LeaseLost(f"lease on {process.public_id} lost before commit")
        consuming: dict[str, Any] = {
            "consumed": True,
            "consumed_at": now,
            "consumed_fence": lease.fence,
        }
        if snapshot is not None:
            consuming["undo_snapshot"] = snapshot
        ids = [message.pk for message in messages]
        journal = prepared.journal
        if journal is not None and journal.written and len(ids) == 1:
            # The journal goes with the statement that consumes its message.
            consuming["payload"] = stripped(journal.message.payload)
        consumed = fastsql.update(
            PendingMessage,
            f"{{id}} IN ({', '.join(['%s'] * len(ids))}) AND {{consumed}} = %s",
            [*ids, False],
            consuming,
        )
        if consumed != len(ids):
            seqs = ", ".join(f"#{message.seq}" for message in messages)
            raise lanes.LeaseLost(f"message {seqs} of {process.public_id} already consumed")
        if journal is not None and journal.written and len(ids) > 1:
            first = journal.message
            fastsql.update(
                PendingMessage, "{id} = %s", [first.pk], {"payload": stripped(first.payload)}
            )
        if snapshot is not None and snapshots.prune_due(process.consumed_count + len(ids)):
            snapshots.prune(process.pk)
        start_spawned(prepared)
        # Read after our row update: a steer committed before it is seen here, one committed
        # after it wakes the lane itself once this transaction has let the lane go.
        stop = ended or ctx.outcome is not None or (quota is not None and bool(quota["ended"]))
        upcoming = (
            [] if stop else next_pendings(process.pk, upcoming_limit, unless_interrupted=True)
        )
        if not upcoming:
            if not ended:
                process.last_error = error
                outcome, reason = ended_status(prepared, Status.IDLE)
                assert outcome in TURN_OUTCOMES
                if quota is not None:
                    quota = end_quota(process, lease, prepared, quota, outcome, reason)
                else:
                    end_run(process, lease, outcome, reason, prepared)
            # A child's end and its report to its parent are one commit.
            lease.reported = deliver_with_commit(process)
        if wake is not None:
            status = Status.RUNNING if upcoming else process.status
            heard_now = wake_listeners.committed(
                wake, status, process.close_reason, ctx.usage, len(ids)
            )
            for heard in heard_now:
                events.emit_after_commit(heard)
        events.flush()
    if quota is not None:
        process.run_quota = quota
    process.conversation_length += added
    process.consumed_count += len(ids)
    prepared.conversation.remember_committed()
    process.prompt_tokens += ctx.usage.prompt_tokens
    process.completion_tokens += ctx.usage.completion_tokens
    process.llm_calls += ctx.usage.llm_calls
    process.usage_estimated = process.usage_estimated or ctx.usage.estimated
    process.last_error = error
    if ctx.usage.last_call is not None:
        process.last_call = ctx.usage.last_call
    process.blocked_by_external = ctx.external_key
    lease.expires_at = now + timedelta(seconds=lanes.lease_seconds())
    return upcoming


def end_run(
    process: ThinkProcess,
    lease: lanes.Lease,
    to_status: Status,
    reason: str,
    prepared: Prepared,
    *,
    call: Call = Call.TURN_END,
    changes: dict[str, Any] | None = None,
    unless: tuple[str, Sequence[Any]] | None = None,
) -> None:
    """Inside the last turn's commit: leave RUNNING and let the lane go (the status event
    goes out with the turn's other events), or keep it for a compaction that is due.
    `unless`: as in transitions.apply."""
    keep = lease.compact_due and to_status != Status.CLOSED
    event = lease_transition(
        process, lease, call, to_status, reason, release=not keep, changes=changes, unless=unless
    )
    prepared.events.emit_after_commit(event)
    lease.released = not keep


def end_run_unless_more_waits(
    process: ThinkProcess,
    lease: lanes.Lease,
    prepared: Prepared,
    turn: dict[str, Any],
    consumed: int,
) -> bool:
    """Inside the commit of a turn that left the process's fate to the lane: when no message
    waits but the `consumed` ones this turn ran, write the turn (`turn`, the row's changes),
    leave RUNNING for IDLE and let the lane go in one compare-and-swap. True if it did; False
    (nothing written) if more messages wait or the lease is gone, and the caller goes the
    long way, which tells the two apart.

    The count of waiting messages is the row's own (`next_pending_seq` and `consumed_count`,
    see ThinkProcess.waiting), so a steer that takes its seq while this statement waits for
    the row (PostgreSQL) is seen when the row is checked again: no message is left behind
    by a lane that let go."""
    process.last_error = turn["last_error"]
    nothing_else_waits = ("{next_pending_seq} - 1 - {consumed_count} = %s", [consumed])
    try:
        end_run(process, lease, Status.IDLE, "", prepared, changes=turn, unless=nothing_else_waits)
    except lanes.LeaseLost:
        return False
    return True


def end_quota(
    process: ThinkProcess,
    lease: lanes.Lease,
    prepared: Prepared,
    quota: dict[str, Any],
    outcome: Status,
    reason: str,
) -> dict[str, Any]:
    """The last turn of a bounded continuation: a process the engine left IDLE goes back to
    the status the continuation found it in (PAUSED, SUSPENDED or IDLE); one that finished or
    blocked stays so. The quota is marked over in the same statement."""
    if outcome == Status.IDLE:
        quota = quotas.ended(quota, "no more work")
        call, outcome = quotas.resting(quota)
    else:
        quota = quotas.ended(quota, str(outcome))
        call = Call.TURN_END
    end_run(process, lease, outcome, reason, prepared, call=call, changes={"run_quota": quota})
    return quota


def lease_transition(
    process: ThinkProcess,
    lease: lanes.Lease,
    call: Call,
    to_status: Status,
    reason: str = "",
    *,
    release: bool = False,
    changes: dict[str, Any] | None = None,
    unless: tuple[str, Sequence[Any]] | None = None,
) -> Event:
    """A status change under the lane's lease (call inside a transaction); returns the status
    event for the caller to store with its other events. A row that moved under the lease
    means the lease is gone."""
    changes = {**(changes or {}), "last_error": process.last_error}
    if release:
        changes.update(lease_owner="", lease_expires_at=None)
    detail = process.last_error if reason == CloseReason.FAILED else ""
    try:
        return transitions.apply(
            process,
            call,
            to_status,
            reason,
            lease=lease,
            changes=changes,
            detail=detail,
            emit=False,
            unless=unless,
        )
    except transitions.TransitionLost as exc:
        raise lanes.LeaseLost(str(exc)) from exc


def drop_own_turns(process: ThinkProcess, lease: lanes.Lease) -> int:
    """A reset starts the process over: the turns it had queued for itself (CONTROL: a
    deferred goal, an `advance`) are consumed unrun, or its next start would run its goal twice.
    What others sent (a person's messages, reports, answers) stays pending. How many."""
    return PendingMessage.objects.filter(
        process_id=process.pk, consumed=False, kind=PendingKind.CONTROL
    ).update(consumed=True, consumed_at=timezone.now(), consumed_fence=lease.fence)


def commit_call(
    process: ThinkProcess,
    lease: lanes.Lease,
    prepared: Prepared,
    call: Call,
    to_status: Status,
    reason: str,
    *,
    own_turns: list[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Store a lifecycle call's outcome: the engine's work (if any), the turns it queued for
    itself (`own_turns`), the caller's `extra` field changes and the new status."""
    ctx = prepared.ctx
    reset = call is Call.RESET
    if ctx.error:
        process.last_error = ctx.error
    with transaction.atomic():
        if reset:
            ConversationMessage.objects.filter(process_id=process.pk).delete()
            added = 0
            dropped = drop_own_turns(process, lease)
        else:
            added = append_conversation(process, prepared)
        if own_turns:
            append_own_turns(process.pk, own_turns)
        changes: dict[str, Any] = {
            **(extra or {}),
            "engine_state": process.engine_state,
            **prepared.engine_params_changes(),
            "last_error": process.last_error,
            "prompt_tokens": fastsql.Add(ctx.usage.prompt_tokens),
            "completion_tokens": fastsql.Add(ctx.usage.completion_tokens),
            "llm_calls": fastsql.Add(ctx.usage.llm_calls),
            **estimated(ctx.usage),
        }
        if reset:
            changes["conversation_length"] = 0
            changes["conversation_epoch"] = fastsql.Add(1)
            changes["consumed_count"] = fastsql.Add(dropped)
        else:
            changes["conversation_length"] = fastsql.Add(added)
        if call in {Call.RESUME, Call.RESET, Call.STOP}:
            # The user decided about a drifted process.
            changes["context_drift"] = False
            process.context_drift = False
        try:
            event = transitions.apply(
                process, call, to_status, reason, lease=lease, changes=changes, emit=False
            )
        except transitions.TransitionLost as exc:
            raise lanes.LeaseLost(f"lease on {process.public_id} lost before commit") from exc
        start_spawned(prepared)
        prepared.events.emit_after_commit(event)
        prepared.events.flush()
    # The row as the commit left it (its counters moved in SQL), read by one prepared statement.
    [stored] = fastsql.select(ThinkProcess, "{id} = %s", [process.pk])
    for field in ThinkProcess._meta.concrete_fields:
        setattr(process, field.attname, getattr(stored, field.attname))
    if added:
        prepared.conversation.remember_committed()
