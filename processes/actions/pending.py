"""Appending pending messages: the one way a message reaches a process's queue."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.states import WAKE_ON_MESSAGE, Status
from vancetope.infra import fastsql

# What a message from the system or from the process itself needs of the row it queues on: a
# process's engine_state (marvin's task tree) is not decoded for every report its children send.
QUEUED_ON = ("id", "session_id", "status", "next_pending_seq")


def take_seqs(
    process_id: int,
    count: int,
    *,
    unless_closed: bool = False,
    names: tuple[str, ...] | None = None,
) -> ThinkProcess | None:
    """Take the process's next `count` pending seqs, in one statement that also locks its row
    until the transaction ends; the process as that left it (the seqs taken end just below its
    `next_pending_seq`), or None if there is no such process (with `unless_closed`, no such
    process that is not CLOSED). `names`: only these fields are read (the others deferred)."""
    where = "{id} = %s"
    params: list[Any] = [process_id]
    if unless_closed:
        where += " AND {status} <> %s"
        params.append(Status.CLOSED)
    found = fastsql.update_returning(
        ThinkProcess, where, params, {"next_pending_seq": fastsql.Add(count)}, names=names
    )
    return found[0] if found else None


def insert_pending(
    process: ThinkProcess, kind: PendingKind, payloads: list[dict[str, Any]]
) -> list[PendingMessage]:
    """Store pending messages with the seqs just taken for them (see take_seqs)."""
    first = process.next_pending_seq - len(payloads)
    messages = [
        fastsql.build(
            PendingMessage,
            {"process_id": process.pk, "seq": first + n, "kind": kind, "payload": payload},
        )
        for n, payload in enumerate(payloads)
    ]
    fastsql.insert(messages, returning_pk=True)
    return messages


def queue_own_turn(process_id: int, text: str) -> None:
    """A CONTROL message from the process to itself, appended under its own lane (so without
    the steer status check): the lane drains it after the current turn."""
    with transaction.atomic():
        append_own_turns(process_id, [text])


def append_own_turns(process_id: int, texts: list[str]) -> None:
    """The same, in the caller's transaction (a lifecycle call's commit: its start's deferred
    goal is stored with its new status, or not at all)."""
    process = take_seqs(process_id, len(texts), names=QUEUED_ON)
    assert process is not None
    insert_pending(process, PendingKind.CONTROL, [{"text": text} for text in texts])


def deliver(process_id: int, kind: PendingKind, payload: dict[str, Any]) -> PendingMessage | None:
    """A message from the system to a process (a child's report, an inbox answer): appended
    whatever the process's status but CLOSED, waking it if it is IDLE or BLOCKED (a PAUSED or
    SUSPENDED process reads it after its resume). None, and nothing stored, if the process is
    gone or CLOSED."""
    from processes.lane.dispatch import wake_lane

    # In a caller's transaction (a lane's commit that ends a child's run) no savepoint: its
    # failure is the caller's.
    with transaction.atomic(savepoint=False):
        process = take_seqs(process_id, 1, unless_closed=True, names=QUEUED_ON)
        if process is None:
            return None
        [message] = insert_pending(process, kind, [payload])
        if process.status in WAKE_ON_MESSAGE:
            wake_lane(process_id)
    return message
