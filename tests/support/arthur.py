"""An arthur chat session, and what was said in it (its chat-message events)."""

from __future__ import annotations

from processes.actions.sessions import create_session
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy


def arthur_session(tenancy: Tenancy) -> Session:
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="arthur",
    )


def said(session: Session, role: str) -> list[str]:
    events = SessionEvent.objects.filter(session_id=session.pk, event="chat-message")
    return [e.data["text"] for e in events.order_by("seq") if e.data["role"] == role]
