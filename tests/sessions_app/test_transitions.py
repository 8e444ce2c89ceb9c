"""The one writer of a session's status (sessions_app/transitions.py): every change leaves one
SessionTransition row and one `session-status` event; a forbidden call or a lost race leaves
nothing."""

from __future__ import annotations

import pytest

from processes.actions.sessions import (
    close_session,
    disconnect_session,
    resume_session,
    suspend_session,
)
from sessions_app import transitions
from sessions_app.models import (
    Session,
    SessionEvent,
    SessionStatus,
    SessionTransition,
    SuspendCause,
)
from sessions_app.services import FingerprintData
from sessions_app.transitions import SessionCall
from tests.support.tenancy import open_session
from vancetope.errors import Conflict

pytestmark = pytest.mark.django_db(transaction=True)

# The fingerprint tests.conftest.open_session binds with.
SAME_CLIENT = FingerprintData(machine_id="m-1", working_dir="/work")


def rows(session_id: int) -> list[tuple[str, str, str, str]]:
    found = SessionTransition.objects.filter(session_id=session_id).order_by("at", "pk")
    return [(r.call, r.from_status, r.to_status, r.cause) for r in found]


def status_events(session_id: int) -> list[str]:
    events = SessionEvent.objects.filter(session_id=session_id, event="session-status")
    return [event.data["status"] for event in events.order_by("seq")]


def snapshot(session_id: int) -> tuple[object, ...]:
    session = Session.objects.get(pk=session_id)
    return (
        session.status,
        session.suspend_cause,
        session.closed_at,
        SessionTransition.objects.filter(session_id=session_id).count(),
        SessionEvent.objects.filter(session_id=session_id).count(),
    )


def test_disconnect_resume_and_close_each_leave_one_row_and_one_status_event(alice):
    # given an open session of a person's terminal (on disconnect: suspend)
    session = open_session(alice)
    assert (rows(session.pk), status_events(session.pk)) == ([], [])
    # when its client goes away
    suspended = disconnect_session(session.pk)
    # then
    assert (suspended.status, suspended.suspend_cause) == (SessionStatus.SUSPENDED, "DISCONNECT")
    assert rows(session.pk) == [("suspend", "OPEN", "SUSPENDED", "DISCONNECT")]
    assert status_events(session.pk) == ["SUSPENDED"]
    # when the same client comes back
    resumed = resume_session(alice.user, session.pk, SAME_CLIENT, None).session
    # then
    assert (resumed.status, resumed.suspend_cause) == (SessionStatus.OPEN, "")
    assert rows(session.pk)[1:] == [("resume", "SUSPENDED", "OPEN", "")]
    assert status_events(session.pk) == ["SUSPENDED", "OPEN"]
    # when it is closed
    closed = close_session(session.pk)
    # then
    assert closed.status == SessionStatus.CLOSED
    assert closed.closed_at is not None
    assert rows(session.pk)[2:] == [("close", "OPEN", "CLOSED", "")]
    assert status_events(session.pk) == ["SUSPENDED", "OPEN", "CLOSED"]


def test_a_second_socket_of_an_open_session_rebinds_without_a_transition(alice):
    session = open_session(alice)
    resume_session(alice.user, session.pk, SAME_CLIENT, None)
    assert (rows(session.pk), status_events(session.pk)) == ([], [])


@pytest.mark.parametrize(
    ("setup", "call", "message"),
    [
        ("close", SessionCall.RESUME, "cannot resume session sess_{id}: it is CLOSED"),
        ("close", SessionCall.CLOSE, "cannot close session sess_{id}: it is CLOSED"),
        ("suspend", SessionCall.SUSPEND, "cannot suspend session sess_{id}: it is SUSPENDED"),
        ("", SessionCall.RESUME, "cannot resume session sess_{id}: it is OPEN"),
    ],
)
def test_a_call_the_table_forbids_raises_409_and_changes_nothing(alice, setup, call, message):
    # given
    session = open_session(alice)
    if setup == "close":
        close_session(session.pk)
    elif setup == "suspend":
        suspend_session(session.pk, SuspendCause.MANUAL)
    loaded = Session.objects.get(pk=session.pk)
    before = snapshot(session.pk)
    # when
    with pytest.raises(Conflict) as refused:
        transitions.apply(loaded, call)
    # then
    assert refused.value.code == 409
    assert refused.value.message == message.format(id=session.pk)
    assert snapshot(session.pk) == before


def test_a_transition_whose_status_moved_meanwhile_writes_nothing(alice):
    # given a copy of an open session read before another caller suspended it
    session = open_session(alice)
    stale = Session.objects.get(pk=session.pk)
    suspend_session(session.pk, SuspendCause.IDLE)
    before = snapshot(session.pk)
    # when the stale copy is suspended again (allowed from OPEN, the status it was read in)
    moved = transitions.apply(stale, SessionCall.SUSPEND, cause="DISCONNECT")
    # then
    assert not moved
    assert snapshot(session.pk) == before
    assert stale.status == SessionStatus.OPEN
