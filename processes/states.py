"""Process statuses and the one transition table (ARCHITECTURE §4).

Every change of a process's status is applied by `processes.transitions`, which checks it here
first; a call the table does not allow raises Conflict (409) before anything is changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from django.db import models

from vancetope.errors import Conflict


class Status(models.TextChoices):
    INIT = "INIT"  # created, engine.start not yet called
    RUNNING = "RUNNING"  # a lifecycle call or turn is running in the lane
    IDLE = "IDLE"  # between turns, pending queue empty; a new message wakes it
    BLOCKED = "BLOCKED"  # waiting for an inbox answer; a new message wakes it
    PAUSED = "PAUSED"  # paused by the user; waits for resume
    SUSPENDED = "SUSPENDED"  # halted by the system; waits for resume
    CLOSED = "CLOSED"  # terminal; see close_reason


class CloseReason(models.TextChoices):
    DONE = "DONE"  # the goal was reached
    STOPPED = "STOPPED"  # stopped by the user, a parent or a session close
    STALE = "STALE"  # engine gone or its version incompatible; never resumed automatically
    FAILED = "FAILED"  # the engine failed and its retries are exhausted


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


@dataclass(frozen=True)
class Rule:
    allowed_from: frozenset[str]
    # None: the call does not change the status by itself (steer, turn end decides).
    to: Status | None
    # For RESET: CLOSED is only allowed with one of these close reasons.
    closed_reasons: frozenset[str] = frozenset()


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
        closed_reasons=frozenset({CloseReason.STOPPED, CloseReason.FAILED}),
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
    rule = TRANSITIONS[call]
    if status not in rule.allowed_from:
        return False
    if status == Status.CLOSED and rule.closed_reasons:
        return close_reason in rule.closed_reasons
    return True


def check_call(call: Call, status: str, close_reason: str = "", *, label: str = "") -> Rule:
    """Return the rule for `call`, or raise Conflict naming the status that forbids it."""
    if not is_allowed(call, status, close_reason):
        shown = f"{status}/{close_reason}" if status == Status.CLOSED and close_reason else status
        who = f"process {label}" if label else "process"
        raise Conflict(f"cannot {call.value} {who}: it is {shown}")
    return TRANSITIONS[call]
