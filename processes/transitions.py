"""The one writer of a process's status.

Every change of status goes through `apply` (one process) or `recover_running` (the restart
sweep's bulk form): checked against the table in processes/states.py, written by
compare-and-swap on the status it was read in (and on the lane's fence when a lane holds the
process), recorded as a ProcessTransition row, and announced as a `process-status` event built
by `status_event` from its protocol model, all in the caller's transaction. Nothing else
writes `status`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from processes.models import ProcessTransition, ThinkProcess
from processes.states import Call, CloseReason, Status, check_call
from protocol.outbound import Event, ProcessStatusEvent, event
from sessions_app.events import emit_event, emit_events
from vancetope.infra import fastsql

if TYPE_CHECKING:
    from processes.lane.lease import Lease


class TransitionLost(Exception):
    """The row was no longer in the status (or under the lease) it was read in: another
    worker changed it first, and nothing was written."""


def status_event(process: ThinkProcess, status: str, reason: str = "") -> Event:
    """The `process-status` event of docs/protocol.md."""
    return event(
        ProcessStatusEvent(
            processId=process.public_id,
            status=status,
            closeReason=reason or None,
            contextDrift=process.context_drift or None,
        )
    )


def apply(
    process: ThinkProcess,
    call: Call,
    to_status: Status,
    reason: str = "",
    *,
    lease: Lease | None = None,
    changes: dict[str, Any] | None = None,
    detail: str = "",
    now: datetime | None = None,
    emit: bool = True,
    unless: tuple[str, Sequence[Any]] | None = None,
) -> Event:
    """Move `process` from the status it was read in to `to_status` by `call`, with
    `changes` (field → value or fastsql.Add) written in the same statement; call inside a
    transaction. Raises Conflict if the table forbids the call, TransitionLost if the row
    moved meanwhile (or the lease is gone, or the row fails `unless`: a further condition
    of the compare-and-swap, as SQL with `{field}` names and its parameters). Returns the
    status event; with `emit=False` the caller stores it with its own events, in the same
    transaction."""
    from_status = process.status
    check_call(call, from_status, process.close_reason, label=process.public_id)
    now = now or timezone.now()
    written = {
        **(changes or {}),
        "status": to_status,
        "close_reason": reason,
        "updated_at": now,
    }
    where = "{status} = %s"
    params: list[Any] = [from_status]
    if unless is not None:
        where = f"{where} AND {unless[0]}"
        params += unless[1]
    if lease is not None:
        updated = lease.update(written, where, params)
    else:
        updated = fastsql.update(
            ThinkProcess, f"{{id}} = %s AND {where}", [process.pk, *params], written
        )
    if updated != 1:
        raise TransitionLost(f"{process.public_id} changed before {call.value} was written")
    fastsql.insert_values(
        ProcessTransition,
        [
            {
                "process_id": process.pk,
                "call": call,
                "from_status": from_status,
                "to_status": to_status,
                "close_reason": reason,
                "detail": detail,
                "at": now,
            }
        ],
    )
    event = status_event(process, to_status, reason)
    if emit:
        emit_event(process.session_id, *event)
    process.status = to_status
    process.close_reason = reason
    return event


def expire(process: ThinkProcess, detail: str, lease: Lease | None = None) -> bool:
    """CLOSED/STALE (the engine is gone or incompatible), in its own transaction; False if
    the process moved meanwhile."""
    try:
        with transaction.atomic():
            apply(
                process, Call.EXPIRE, Status.CLOSED, CloseReason.STALE, lease=lease, detail=detail
            )
    except TransitionLost:
        return False
    return True


def recover_running(candidates: Sequence[tuple[int, int]], owners: dict[int, str]) -> int:
    """RUNNING → IDLE (call `recover`) for these (process, fence) pairs, in one transaction
    and three statements however many. A process whose fence moved was taken by a worker
    meanwhile (or by another sweeper) and is left alone. Returns how many were recovered."""
    rule = check_call(Call.RECOVER, Status.RUNNING)
    assert rule.to is not None
    now = timezone.now()
    pairs = " OR ".join(["({id} = %s AND {lease_fence} = %s)"] * len(candidates))
    with transaction.atomic():
        taken = fastsql.update_returning(
            ThinkProcess,
            f"{{status}} = %s AND ({pairs})",
            [Status.RUNNING, *itertools.chain.from_iterable(candidates)],
            {"status": rule.to, "lease_owner": "", "lease_expires_at": None, "updated_at": now},
        )
        fastsql.insert(
            [
                ProcessTransition(
                    process_id=process.pk,
                    call=Call.RECOVER,
                    from_status=Status.RUNNING,
                    to_status=rule.to,
                    detail=f"lease of {owners.get(process.pk) or '?'} ended",
                    at=now,
                )
                for process in taken
            ]
        )
        by_session: dict[int, list[Event]] = {}
        for process in taken:
            by_session.setdefault(process.session_id, []).append(status_event(process, rule.to))
        for session_id, events in by_session.items():
            emit_events(session_id, events)
    return len(taken)
