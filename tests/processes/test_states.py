from __future__ import annotations

import pytest

from processes.states import TRANSITIONS, Call, CloseReason, Status, check_call, is_allowed
from vancetope.errors import Conflict

PUBLIC_CALLS = [
    Call.START,
    Call.PAUSE,
    Call.RESUME,
    Call.SUSPEND,
    Call.STEER,
    Call.STOP,
    Call.RESET,
]


@pytest.mark.parametrize(
    ("call", "allowed"),
    [
        (Call.START, {"INIT"}),
        (Call.PAUSE, {"RUNNING", "IDLE", "BLOCKED"}),
        (Call.RESUME, {"PAUSED", "SUSPENDED"}),
        (Call.SUSPEND, {"RUNNING", "IDLE", "BLOCKED", "PAUSED", "SUSPENDED"}),
        (Call.STEER, {"RUNNING", "IDLE", "BLOCKED", "PAUSED"}),
        (Call.STOP, {"INIT", "RUNNING", "IDLE", "BLOCKED", "PAUSED", "SUSPENDED"}),
        (Call.RESET, {"PAUSED", "SUSPENDED", "CLOSED"}),
        (Call.UNDO, {"IDLE", "PAUSED", "BLOCKED"}),
    ],
)
def test_table_allows_exactly_the_statuses_of_architecture_section_4(call, allowed):
    assert {status for status in Status.values if is_allowed(call, status, "STOPPED")} == allowed


def test_reset_of_a_closed_process_needs_close_reason_stopped_or_failed():
    assert is_allowed(Call.RESET, Status.CLOSED, CloseReason.STOPPED)
    assert is_allowed(Call.RESET, Status.CLOSED, CloseReason.FAILED)
    for reason in (CloseReason.DONE, CloseReason.STALE):
        assert not is_allowed(Call.RESET, Status.CLOSED, reason)


def test_forbidden_call_raises_conflict_naming_the_status():
    with pytest.raises(Conflict, match="cannot steer process tp_3: it is CLOSED/STOPPED"):
        check_call(Call.STEER, Status.CLOSED, CloseReason.STOPPED, label="tp_3")


def test_every_call_has_one_rule():
    assert set(TRANSITIONS) == set(Call)
