"""Process statuses and the one transition table.

Every change of a process's status is applied by `processes.transitions`, which checks it here
first (the table's rules are the shared machine's, vancetope/statemachine.py); a call the
table does not allow raises Conflict (409) before anything is changed. The statuses themselves
are the protocol's words (protocol/vocabulary.py).
"""

from __future__ import annotations

from enum import StrEnum

from protocol.vocabulary import CloseReason, Status
from vancetope import statemachine
from vancetope.errors import Conflict


class Call(StrEnum):
    """Lifecycle calls (public) and the lane's own turn calls (internal)."""

    START = "start"
    PAUSE = "pause"
    RESUME = "resume"
    SUSPEND = "suspend"
    STEER = "steer"
    STOP = "stop"
    RESET = "reset"
    # Take back the last turn of a person's message (processes/actions/undo.py).
    UNDO = "undo"
    # Internal: the lane begins a turn on a woken process, and ends it.
    TURN = "turn"
    TURN_END = "turn-end"
    # Internal: the process's engine is gone or incompatible.
    EXPIRE = "expire"
    # Internal: a lane left RUNNING by a dead worker (its lease ended) goes back to IDLE.
    RECOVER = "recover"


ALL = frozenset(Status.values)


Rule = statemachine.Rule[Status]

TRANSITIONS: dict[Call, Rule] = {
    Call.START: Rule(frozenset({Status.INIT}), Status.IDLE),
    Call.PAUSE: Rule(frozenset({Status.RUNNING, Status.IDLE, Status.BLOCKED}), Status.PAUSED),
    Call.RESUME: Rule(frozenset({Status.PAUSED, Status.SUSPENDED}), Status.IDLE),
    Call.SUSPEND: Rule(ALL - {Status.INIT, Status.CLOSED}, Status.SUSPENDED),
    Call.STEER: Rule(frozenset({Status.RUNNING, Status.IDLE, Status.BLOCKED, Status.PAUSED}), None),
    Call.STOP: Rule(ALL - {Status.CLOSED}, Status.CLOSED),
    Call.RESET: Rule(
        frozenset({Status.PAUSED, Status.SUSPENDED, Status.CLOSED}),
        Status.INIT,
        # From CLOSED only what was stopped or failed; a DONE or STALE process stays closed.
        reasons_from={Status.CLOSED: frozenset({CloseReason.STOPPED, CloseReason.FAILED})},
    ),
    # A BLOCKED process goes IDLE (what it waited for was the undone turn's); others stay.
    Call.UNDO: Rule(frozenset({Status.IDLE, Status.PAUSED, Status.BLOCKED}), None),
    Call.TURN: Rule(frozenset({Status.IDLE, Status.BLOCKED}), Status.RUNNING),
    Call.TURN_END: Rule(frozenset({Status.RUNNING}), None),
    Call.EXPIRE: Rule(ALL - {Status.CLOSED}, Status.CLOSED),
    Call.RECOVER: Rule(frozenset({Status.RUNNING}), Status.IDLE),
}

# Statuses in which a new pending message wakes the lane (PAUSED/SUSPENDED wait for resume).
WAKE_ON_MESSAGE = frozenset({Status.IDLE, Status.BLOCKED})
# Where a turn may end up.
TURN_OUTCOMES = frozenset({Status.IDLE, Status.BLOCKED, Status.CLOSED})


def is_allowed(call: Call, status: str, close_reason: str = "") -> bool:
    return TRANSITIONS[call].allows(status, close_reason)


def check_call(call: Call, status: str, close_reason: str = "", *, label: str = "") -> Rule:
    """Return the rule for `call`, or raise Conflict naming the status that forbids it."""
    if not is_allowed(call, status, close_reason):
        shown = f"{status}/{close_reason}" if status == Status.CLOSED and close_reason else status
        who = f"process {label}" if label else "process"
        raise Conflict(f"cannot {call.value} {who}: it is {shown}")
    return TRANSITIONS[call]
