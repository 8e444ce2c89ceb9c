"""Undo for human clients (docs/protocol.md `process-undo`): take back a turn and what it caused.

An undo takes back the newest turn on a person's message that is not undone yet, and
everything the process did since that turn began: its conversation messages are marked undone
(kept, shown greyed in the admin, never sent to the LLM or shown to clients again, their events
left out of replays), its engine state and params go back to the turn's snapshot
(processes/lane/snapshots.py), the children it spawned are stopped (with theirs), and the apps
that receive the `turn_undone` signal (processes/signals.py) take back the rest (the inbox
dismisses the items it posted that are still OPEN). The person's message is handed back, to be
edited and sent again. Nothing outside the Brain is undone: a client tool's call is listed in
`notUndone`.

The undo holds the process's lane while it works, so no turn runs meanwhile, and the reports
of the children it stops never wake the process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from django.db import transaction
from django.utils import timezone

from processes import signals, transitions
from processes.actions import lifecycle
from processes.capabilities.recall import forget_from
from processes.lane import lease as lanes
from processes.lane import snapshots
from processes.lane.dispatch import wake_lane
from processes.models import (
    Compaction,
    ConversationMessage,
    PendingKind,
    PendingMessage,
    ThinkProcess,
)
from processes.queries import check_changeable, has_work, load_process
from processes.states import Call, Status, check_call
from protocol.outbound import TaskTreeEvent, event
from sessions_app.events import emit_event
from sessions_app.models import HUMAN_CLIENT_TYPES, SessionEvent
from vancetope.errors import Conflict
from vancetope.infra import fastsql

# The events of a turn that make up a client's transcript: left out of replays once undone.
TRANSCRIPT_EVENTS = ("chat-message", "chat-delta", "tool-call")


@dataclass
class TakenBack:
    """What an app took back of an undone turn: items dismissed, and what stays as it was
    (`{kind, id, text}` each)."""

    dismissed: list[str] = field(default_factory=list)
    not_undone: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Undone:
    process: ThinkProcess
    seq: int
    text: str
    messages: int
    stopped: list[str]
    dismissed: list[str]
    not_undone: list[dict[str, str]]

    def data(self) -> dict[str, Any]:
        """`undone` of the `process-undone` reply (docs/protocol.md)."""
        return {
            "seq": self.seq,
            "text": self.text,
            "messages": self.messages,
            "stoppedProcesses": self.stopped,
            "dismissedItems": self.dismissed,
            "notUndone": self.not_undone,
        }


def check_human(process: ThinkProcess, call: str = "undo") -> None:
    """Undo and unsend are for the person at a human client, not for system clients."""
    session = process.session
    if session.system or not session.is_human or session.client_type not in HUMAN_CLIENT_TYPES:
        raise Conflict(
            f"cannot {call} process {process.public_id}: {call} is for human clients "
            f"(its session {session.public_id} is a {session.client_type} client)"
        )


def visible_process(process_id: int, user: Any) -> ThinkProcess:
    """The process (with its session) if `user` may see it (None: any, for the admin)."""
    process = load_process(process_id)
    if user is not None:
        check_changeable(process, user)
    return process


def undo_turn(process_id: int, *, user: Any = None) -> Undone:
    """Take back the process's newest turn on a person's message (see the module). 409, and
    nothing changed, for a system session's process, a status that forbids it (RUNNING: pause
    first or let the turn finish), a process with no turn to undo or a turn too old to undo."""
    process = visible_process(process_id, user)
    check_human(process)
    check_call(Call.UNDO, process.status, process.close_reason, label=process.public_id)
    lease = lanes.try_acquire(process_id)
    if lease is None:
        raise Conflict(
            f"cannot undo process {process.public_id}: a turn is running; pause it first or "
            "let the turn finish"
        )
    with lanes.holding(lease):
        held = lease.process or load_process(process_id)
        held.session = process.session
        check_call(Call.UNDO, held.status, held.close_reason, label=held.public_id)
        target = last_turn(held)
        snapshot = target.undo_snapshot
        assert snapshot is not None
        since = datetime.fromisoformat(str(snapshot["at"]))
        undone = _take_back(held, lease, target, snapshot, since, user)
        undone.stopped, stopped_notes = _stop_children(held, since)
        undone.not_undone.extend(stopped_notes)
        _drop_reports_of(held, lease, since)
    if has_work(process_id):
        wake_lane(process_id)
    undone.process = ThinkProcess.objects.select_related("session").get(pk=process_id)
    return undone


def last_turn(process: ThinkProcess) -> PendingMessage:
    """The newest turn on a person's message not undone yet, if it is among the kept ones."""
    turns = PendingMessage.objects.filter(
        process_id=process.pk, kind=PendingKind.USER, consumed_fence__isnull=False
    )
    target = turns.filter(undone_at__isnull=True).order_by("-seq").first()
    if target is None:
        raise Conflict(f"cannot undo process {process.public_id}: it has no turn to undo")
    keep = snapshots.keep_turns()
    if target.undo_snapshot is None or turns.filter(seq__gte=target.seq).count() > keep:
        raise Conflict(
            f"cannot undo the turn on message #{target.seq} of {process.public_id}: it is too "
            f"old to undo (only the last {keep} turns can be undone)"
        )
    return target


def _take_back(
    process: ThinkProcess,
    lease: lanes.Lease,
    target: PendingMessage,
    snapshot: dict[str, Any],
    since: datetime,
    user: Any,
) -> Undone:
    """In one transaction: the messages and events marked undone, the state put back, what
    other apps take back, and the `undo` transition with its record."""
    now = timezone.now()
    by = user if user is not None and user.is_authenticated else None
    to_status = Status.IDLE if process.status == Status.BLOCKED else Status(process.status)
    with transaction.atomic():
        hidden = ConversationMessage.objects.filter(
            process_id=process.pk,
            index__gte=int(snapshot["conversationLength"]),
            undone_at__isnull=True,
        ).update(undone_at=now, undone_by=by)
        PendingMessage.objects.filter(pk=target.pk).update(undone_at=now, undone_by=by)
        # A compaction that folded a message taken back folds no more: the next call that
        # comes near the window folds anew (processes/lane/compaction.py).
        Compaction.objects.filter(
            process_id=process.pk,
            last_index__gte=int(snapshot["conversationLength"]),
            undone_at__isnull=True,
        ).update(undone_at=now)
        forget_from(process.public_id, int(snapshot["conversationLength"]), "its turn was undone")
        events = SessionEvent.objects.filter(
            session_id=process.session_id,
            created_at__gte=since,
            event__in=TRANSCRIPT_EVENTS,
            data__processId=process.public_id,
            undone=False,
        )
        not_undone = [
            {
                "kind": "client-tool",
                "id": str(found.data.get("callId", "")),
                "text": f"the client ran {found.data.get('tool', '?')}; the Brain cannot undo it",
            }
            for found in events.filter(event="tool-call").order_by("seq")
        ]
        events.update(undone=True)
        dismissed: list[str] = []
        for _receiver, returned in signals.turn_undone.send(
            ThinkProcess, process=process, since=since, by=by
        ):
            taken = cast(TakenBack, returned)
            dismissed.extend(taken.dismissed)
            not_undone.extend(taken.not_undone)
        who = getattr(by, "username", "") or "the admin"
        transitions.apply(
            process,
            Call.UNDO,
            to_status,
            lease=lease,
            changes={
                "engine_state": snapshot["engineState"],
                "engine_params": snapshot["engineParams"],
                "conversation_epoch": fastsql.Add(1),
            },
            detail=f"turn on message #{target.seq} undone by {who} ({hidden} messages)",
            now=now,
        )
        tree = snapshot["engineState"].get("taskTree")
        if isinstance(tree, dict) and tree != process.engine_state.get("taskTree"):
            # Clients draw the task tree as it is again.
            emit_event(
                process.session_id, *event(TaskTreeEvent(processId=process.public_id, tree=tree))
            )
    return Undone(process, target.seq, target.text, hidden, [], dismissed, not_undone)


def _spawned_since(process: ThinkProcess, since: datetime) -> list[ThinkProcess]:
    return list(ThinkProcess.objects.filter(parent_id=process.pk, created_at__gte=since))


def _stop_children(
    process: ThinkProcess, since: datetime
) -> tuple[list[str], list[dict[str, str]]]:
    """Stop the children spawned since the turn began (stop cascades to theirs); one that
    had ended already is listed as not undone, with how it ended."""
    stopped: list[str] = []
    notes: list[dict[str, str]] = []
    for child in _spawned_since(process, since):
        if child.status != Status.CLOSED:
            try:
                lifecycle.stop_process(child.pk)
            except Conflict:
                child.refresh_from_db()
            else:
                stopped.append(child.public_id)
                continue
        text = f"{child.public_id} had ended ({child.close_reason or child.status}) already"
        notes.append({"kind": "process", "id": child.public_id, "text": text})
    return stopped, notes


def _drop_reports_of(process: ThinkProcess, lease: lanes.Lease, since: datetime) -> int:
    """The reports of the undone turn's children still pending (their stop sends one) are
    consumed unread: the process never hears of children it no longer has."""
    children = [child.public_id for child in _spawned_since(process, since)]
    if not children:
        return 0
    with transaction.atomic():
        dropped = PendingMessage.objects.filter(
            process_id=process.pk,
            consumed=False,
            kind=PendingKind.PARENT_REPORT,
            payload__childId__in=children,
        ).update(consumed=True, consumed_at=timezone.now(), consumed_fence=lease.fence)
        if dropped:
            lease.update({"consumed_count": fastsql.Add(dropped)})
    return dropped
