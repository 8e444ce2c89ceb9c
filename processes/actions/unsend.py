"""Unsend (docs/protocol.md `process-unsend`): a person withdraws a message no turn has read yet.

The message is consumed unread, in one transaction with the process's count of consumed
messages, and marked undone: no lane answers it, also after a restart (recovery and the lanes
read only unconsumed messages). A message a turn has read (or is reading right now) answers
409: its turn is taken back with an undo.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from processes.actions.undo import check_human, visible_process
from processes.models import PendingKind, PendingMessage, ThinkProcess
from vancetope.errors import Conflict, NotFound

# What a person sends: a chat message or a steer.
UNSENDABLE = frozenset({PendingKind.USER, PendingKind.STEER})


def unsend_message(process_id: int, seq: int, *, user: Any = None) -> PendingMessage:
    """Withdraw the pending message `seq` of the process (see the module)."""
    process = visible_process(process_id, user)
    check_human(process, "unsend")
    now = timezone.now()
    with transaction.atomic():
        # Lock the process row first (as a lane's commit does), so a lane that takes the lease
        # or looks for its next message meanwhile sees this one either still pending, with
        # its lease live (then 409 below), or already withdrawn.
        ThinkProcess.objects.filter(pk=process_id).update(consumed_count=F("consumed_count"))
        row = ThinkProcess.objects.get(pk=process_id)
        message = PendingMessage.objects.filter(process_id=process_id, seq=seq).first()
        if message is None:
            raise NotFound(f"message #{seq} of {process.public_id} not found")
        what = f"message #{seq} of {process.public_id}"
        if message.kind not in UNSENDABLE:
            raise Conflict(f"cannot unsend {what}: only a person's chat or steer can be unsent")
        if message.consumed:
            if message.undone_at is not None and message.consumed_fence is None:
                raise Conflict(f"cannot unsend {what}: it was unsent already")
            raise Conflict(
                f"cannot unsend {what}: a turn has answered it; undo that turn instead "
                f"(process-undo, or POST /api/processes/{process.public_id}/undo)"
            )
        if _in_the_lanes_hands(row, message):
            raise Conflict(
                f"cannot unsend {what}: a turn is answering it now; undo that turn once it "
                "is done (process-undo)"
            )
        by = user if user is not None and user.is_authenticated else None
        PendingMessage.objects.filter(pk=message.pk).update(
            consumed=True, consumed_at=now, undone_at=now, undone_by=by
        )
        ThinkProcess.objects.filter(pk=process_id).update(consumed_count=F("consumed_count") + 1)
    message.consumed, message.consumed_at, message.undone_at = True, now, now
    return message


def withdraw_order(process_id: int, text: str) -> bool:
    """Withdraw the system's CONTROL order `text` to the process if no turn has read it yet
    (consumed unread and marked undone, as an unsend is): its reason is gone (the thinking
    space let go of the lock it was for), so no later turn obeys it. False if none was left
    to withdraw (read, or being read now)."""
    now = timezone.now()
    with transaction.atomic():
        ThinkProcess.objects.filter(pk=process_id).update(consumed_count=F("consumed_count"))
        row = ThinkProcess.objects.filter(pk=process_id).first()
        if row is None:
            return False
        unread = PendingMessage.objects.filter(
            process_id=process_id, kind=PendingKind.CONTROL, consumed=False, payload__text=text
        )
        withdrawn = 0
        for message in unread.order_by("seq"):
            if _in_the_lanes_hands(row, message):
                continue
            withdrawn += PendingMessage.objects.filter(pk=message.pk, consumed=False).update(
                consumed=True, consumed_at=now, undone_at=now
            )
        if withdrawn:
            ThinkProcess.objects.filter(pk=process_id).update(
                consumed_count=F("consumed_count") + withdrawn
            )
    return withdrawn > 0


def _in_the_lanes_hands(process: ThinkProcess, message: PendingMessage) -> bool:
    """A live lease and this the next message: the lane has read it for its turn."""
    if not process.lease_owner or process.lease_expires_at is None:
        return False
    if process.lease_expires_at <= timezone.now():
        return False
    first = (
        PendingMessage.objects.filter(process_id=process.pk, consumed=False)
        .order_by("seq")
        .values_list("seq", flat=True)
        .first()
    )
    return first == message.seq
