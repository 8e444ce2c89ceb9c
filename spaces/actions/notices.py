"""A returned child's notice in its parent's conversation: appended once, never waking it.

The notice is one user-role message with the returned Handoff, stored in the parent's
conversation and shown in its chat; the parent's agent reads it on its next turn, whoever
starts that turn. It is not appended while the parent's lane runs (that turn's commit numbers
its own messages): the child keeps `notice_pending`, and the end of the parent's turn
(spaces/turn_end.py) appends it. Claiming `notice_pending` by compare-and-swap makes it once.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from processes.models import ConversationMessage, ThinkProcess
from processes.states import Status
from protocol.outbound import ChatMessageEvent, event
from sessions_app.events import emit_event
from spaces.models import ThinkingNode


def notice_text(child: ThinkingNode) -> str:
    return (
        f"[thinking: {child.public_id} returned] Branch “{child.title}” returned its "
        f"Handoff:\n\n{child.returned_handoff}"
    )


def deliver_notices(parent_pk: int | None) -> int:
    """Append the waiting notices of the parent's returned children, unless its lane runs;
    how many were appended."""
    if parent_pk is None:
        return 0
    parent = ThinkingNode.objects.filter(pk=parent_pk).first()
    if parent is None:
        return 0
    delivered = 0
    waiting = ThinkingNode.objects.filter(parent_id=parent_pk, notice_pending=True).order_by("pk")
    for child in waiting:
        with transaction.atomic():
            process = (
                ThinkProcess.objects.select_for_update().filter(pk=parent.chat_process_id).first()
            )
            if process is None or process.status == Status.RUNNING:
                return delivered
            claimed = ThinkingNode.objects.filter(pk=child.pk, notice_pending=True).update(
                notice_pending=False
            )
            if claimed != 1:
                continue
            text = notice_text(child)
            ThinkProcess.objects.filter(pk=process.pk).update(
                conversation_length=F("conversation_length") + 1
            )
            ConversationMessage.objects.create(
                process_id=process.pk, index=process.conversation_length, role="user", content=text
            )
            emit_event(
                process.session_id,
                *event(ChatMessageEvent(processId=process.public_id, role="user", text=text)),
            )
            delivered += 1
    return delivered
