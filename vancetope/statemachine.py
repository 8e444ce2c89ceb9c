"""The one small status machine every app's transitions module uses.

An app declares its table: for each call, a `Rule` (the statuses it is allowed from and the
status it leads to). Its transitions module, the one writer of that status, checks a call with
`check` (a call the table does not allow is a 409 and changes nothing), moves the row with
`move` (compare-and-swap on the status it was read in: True if this caller moved it, False and
nothing written if another got there first) and records the change as a row of its
`TransitionRecord` model (vancetope/transition_record.py), in the same transaction as the
event it stores.

Every app declares its table here (processes/states.py, sessions_app, inbox, triggers and
spaces' transitions modules; tests/test_statemachine.py checks each). Three writers keep a
compare-and-swap of their own on that table, each for a reason: processes (fenced by the lane's
lease, in the turn's counted statements: processes/transitions.py), a run's finish and rest
(fastsql on the webhook and turn paths: triggers/transitions.py) and a thinking space (one
swap on the space's revision for a whole mutation of its nodes: spaces/transitions.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from django.db import models

from vancetope.errors import Conflict

S = TypeVar("S", bound=str)
C = TypeVar("C", bound=StrEnum)


@dataclass(frozen=True)
class Rule(Generic[S]):
    allowed_from: frozenset[str]
    # None: the call does not change the status by itself (a process's steer: its turn decides).
    to: S | None
    # Statuses the call is allowed from only with one of these reasons (a process's reset from
    # CLOSED: only a STOPPED or FAILED one).
    reasons_from: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def target(self) -> S:
        """The status the call leads to, in a table whose every call changes the status."""
        assert self.to is not None, "this call leaves the status to its caller"
        return self.to

    def allows(self, status: str, reason: str = "") -> bool:
        if status not in self.allowed_from:
            return False
        needed = self.reasons_from.get(status)
        return needed is None or reason in needed


def check(table: Mapping[C, Rule[S]], call: C, status: str, what: str) -> Rule[S]:
    """The rule for `call`, or Conflict naming `what` ("session sess_3") and its status."""
    rule = table[call]
    if not rule.allows(status):
        raise Conflict(f"cannot {call.value} {what}: it is {status}")
    return rule


def move(
    row: models.Model,
    from_status: str,
    written: dict[str, Any],
    record: models.Model | None = None,
    *,
    status_field: str = "status",
    where: dict[str, Any] | None = None,
) -> bool:
    """Compare-and-swap: write `written` to `row` only if it is still in `from_status`, then
    save `record` (its transition row) and set the written fields on `row`. True if this caller
    moved it; False, and nothing written, if another caller moved it first. Call inside the
    transaction that stores the change's event. `where`: more columns the row must still hold
    (the same compare-and-swap)."""
    rows = type(row)._default_manager.filter(
        pk=row.pk, **{status_field: from_status}, **(where or {})
    )
    if rows.update(**written) != 1:
        return False
    if record is not None:
        record.save(force_insert=True)
    for name, value in written.items():
        setattr(row, name, value)
    return True
