"""A status table: which calls a model's status allows, and where each leads.

Each app's transitions module declares its table with `Rule`s and checks a call with `check`
before it writes (a call the table does not allow is a 409 and changes nothing). Processes keep
their own richer table (processes/states.py: a call may leave the status to the engine, and
reset depends on the close reason)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from vancetope.errors import Conflict

S = TypeVar("S", bound=str)
C = TypeVar("C", bound=StrEnum)


@dataclass(frozen=True)
class Rule(Generic[S]):
    allowed_from: frozenset[str]
    to: S


def check(table: Mapping[C, Rule[S]], call: C, status: str, what: str) -> Rule[S]:
    """The rule for `call`, or Conflict naming `what` ("session sess_3") and its status."""
    rule = table[call]
    if status not in rule.allowed_from:
        raise Conflict(f"cannot {call.value} {what}: it is {status}")
    return rule
