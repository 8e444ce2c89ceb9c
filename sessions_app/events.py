"""Writing session events: numbered per session, stored for replay, then pushed to the socket.

The seq is taken under the session row's lock, so seq N+1 exists only once seq N is committed:
a socket that sees a gap can always fill it from the database (see the consumer).
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from sessions_app.models import Session, SessionEvent

log = logging.getLogger(__name__)


def group_name(session_id: int) -> str:
    return f"session.{session_id}"


def record_event(session_id: int, event: str, data: dict[str, Any]) -> SessionEvent:
    with transaction.atomic():
        Session.objects.filter(pk=session_id).update(last_seq=F("last_seq") + 1)
        seq = Session.objects.filter(pk=session_id).values_list("last_seq", flat=True).get()
        return SessionEvent.objects.create(session_id=session_id, seq=seq, event=event, data=data)


def push_frame(session_id: int, frame: dict[str, Any]) -> None:
    """Hand a frame to every socket bound to the session (none bound is fine: it is stored)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(session_id), {"type": "session.event", "frame": frame}
        )
    except Exception:
        # The event is stored; a client that missed the push replays it by seq.
        log.exception("could not push event to session %s", session_id)


def emit_event(session_id: int, event: str, data: dict[str, Any]) -> SessionEvent:
    """Store the event, and push it once the surrounding transaction (if any) has committed."""
    stored = record_event(session_id, event, data)
    frame = stored.as_frame()
    transaction.on_commit(lambda: push_frame(session_id, frame))
    return stored


def events_since(
    session_id: int, since_seq: int, until_seq: int | None = None
) -> list[SessionEvent]:
    events = SessionEvent.objects.filter(session_id=session_id, seq__gt=since_seq)
    if until_seq is not None:
        events = events.filter(seq__lt=until_seq)
    return list(events.order_by("seq"))
