"""The one writer of a session's status, and its table.

| call    | allowed in        | result    |
| ------- | ----------------- | --------- |
| suspend | OPEN              | SUSPENDED (with its cause) |
| resume  | SUSPENDED         | OPEN      |
| close   | OPEN, SUSPENDED   | CLOSED    |

`apply` checks the call against the table (409, nothing changed), writes the change by
compare-and-swap on the status it was read in, records a SessionTransition row and stores the
`session-status` event, in one transaction (vancetope/statemachine.py). Nothing else writes a
session's status.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django.db import transaction
from django.utils import timezone

from protocol.outbound import SessionStatusEvent, event
from sessions_app.events import emit_event
from sessions_app.models import Session, SessionStatus, SessionTransition
from vancetope import statemachine
from vancetope.statemachine import Rule


class SessionCall(StrEnum):
    SUSPEND = "suspend"
    RESUME = "resume"
    CLOSE = "close"


TRANSITIONS: dict[SessionCall, Rule[SessionStatus]] = {
    SessionCall.SUSPEND: Rule(frozenset({SessionStatus.OPEN}), SessionStatus.SUSPENDED),
    SessionCall.RESUME: Rule(frozenset({SessionStatus.SUSPENDED}), SessionStatus.OPEN),
    SessionCall.CLOSE: Rule(
        frozenset({SessionStatus.OPEN, SessionStatus.SUSPENDED}), SessionStatus.CLOSED
    ),
}


def check(call: SessionCall, status: str, label: str) -> Rule[SessionStatus]:
    return statemachine.check(TRANSITIONS, call, status, f"session {label}")


def apply(
    session: Session,
    call: SessionCall,
    *,
    cause: str = "",
    changes: dict[str, Any] | None = None,
    binding: int | None = None,
) -> bool:
    """Move the session from the status it was read in; False (nothing written) if another
    caller moved it first. `changes` are written in the same statement. `binding`: only if
    the session is still at that bind of a client (Session.binding)."""
    rule = check(call, session.status, session.public_id)
    now = timezone.now()
    written: dict[str, Any] = {**(changes or {}), "status": rule.target(), "suspend_cause": cause}
    if rule.target() == SessionStatus.CLOSED:
        written["closed_at"] = now
    record = SessionTransition(
        session_id=session.pk,
        call=call,
        from_status=session.status,
        to_status=rule.target(),
        cause=cause,
        at=now,
    )
    with transaction.atomic():
        where = None if binding is None else {"binding": binding}
        if not statemachine.move(session, session.status, written, record, where=where):
            return False
        emit_event(session.pk, *event(SessionStatusEvent(status=rule.target())))
    return True
