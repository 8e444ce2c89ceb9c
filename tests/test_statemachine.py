"""The shared status machine (vancetope/statemachine.py): a table's rules, its check, and the
compare-and-swap that moves a row once and records it."""

from __future__ import annotations

import importlib
from enum import StrEnum

import pytest

from processes.states import Call, CloseReason, Status, is_allowed
from sessions_app.models import Session, SessionStatus, SessionTransition
from tests.support.tenancy import Tenancy, open_session
from vancetope import statemachine
from vancetope.errors import Conflict
from vancetope.statemachine import Rule


class Door(StrEnum):
    OPEN = "open"
    SHUT = "shut"


TABLE = {Door.SHUT: Rule(frozenset({"OPEN"}), "SHUT")}


def test_a_call_the_table_does_not_allow_is_a_conflict_naming_the_status() -> None:
    assert statemachine.check(TABLE, Door.SHUT, "OPEN", "door d_1").target() == "SHUT"
    with pytest.raises(Conflict, match="cannot shut door d_1: it is SHUT"):
        statemachine.check(TABLE, Door.SHUT, "SHUT", "door d_1")


def test_a_rule_may_allow_a_status_only_with_some_reasons() -> None:
    # a process is reset from CLOSED only when it was stopped or failed
    assert is_allowed(Call.RESET, Status.CLOSED, CloseReason.STOPPED)
    assert not is_allowed(Call.RESET, Status.CLOSED, CloseReason.DONE)
    assert is_allowed(Call.RESET, Status.PAUSED)


@pytest.mark.django_db
def test_a_move_writes_and_records_once_and_a_second_from_the_old_status_writes_nothing(
    alice: Tenancy,
) -> None:
    # given a session read OPEN twice
    session = open_session(alice)
    first, second = Session.objects.get(pk=session.pk), Session.objects.get(pk=session.pk)

    def record() -> SessionTransition:
        return SessionTransition(
            session_id=session.pk, call="close", from_status="OPEN", to_status="CLOSED"
        )

    # when both move it from OPEN
    written = {"status": SessionStatus.CLOSED}
    assert statemachine.move(first, SessionStatus.OPEN, written, record())
    assert not statemachine.move(second, SessionStatus.OPEN, written, record())
    # then the first won, set its fields and left one record row; the second changed nothing
    assert first.status == SessionStatus.CLOSED
    assert second.status == SessionStatus.OPEN
    assert SessionTransition.objects.filter(session_id=session.pk, call="close").count() == 1


@pytest.mark.parametrize(
    "module",
    ["processes.states", "sessions_app.transitions", "inbox.transitions",
     "triggers.transitions", "spaces.transitions"],
)  # fmt: skip
def test_every_app_declares_its_table_of_calls_on_the_shared_machine(module: str) -> None:
    table = importlib.import_module(module).TRANSITIONS
    # one rule of the shared machine per call, each leading to a status of the app's own
    assert table
    for call, rule in table.items():
        assert isinstance(call, StrEnum)
        assert isinstance(rule, Rule)
        assert rule.allowed_from


def test_a_runs_calls_lead_where_the_table_says_and_a_choice_only_to_an_outcome() -> None:
    from triggers import transitions
    from triggers.models import RunStatus

    assert transitions.target(transitions.RunCall.WAKE) == RunStatus.RUNNING
    assert transitions.source(transitions.RunCall.FINISH) == RunStatus.RUNNING
    assert transitions.target(transitions.RunCall.FINISH, RunStatus.BLOCKED) == RunStatus.BLOCKED
    with pytest.raises(AssertionError, match="finish cannot lead to"):
        transitions.target(transitions.RunCall.FINISH, RunStatus.RUNNING)
