"""The one writer of a run's status, and its table.

| call   | allowed in | result                                                     |
| ------ | ---------- | ---------------------------------------------------------- |
| start  | (new run)  | running                                                    |
| finish | running    | completed, completed_partial, blocked or failed            |
| wake   | blocked    | running (its process was answered and went on)             |
| store  | (new run)  | running or finished: a person's run, by the lane's commit  |
| rest   | running    | completed, blocked or failed: a person's run, in place     |

`finish` writes the outcome by compare-and-swap on `running` (a run is finished once, however
many of its processes settle at the same time), records a RunTransition row and announces the
run; False, and nothing written, if the run was finished already. `wake` takes a blocked run
back to running the same way, so that its real end is recorded after it (blocked → running →
completed). A person's run (trigger `user`) is written inside the commit of its process's turn
and records no RunTransition rows (its record is its process's transitions): `store` and
`rest` are its two writes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.utils import timezone

from triggers.models import RunLog, RunStatus, RunTransition
from vancetope import statemachine
from vancetope.infra import fastsql
from vancetope.observability import metrics
from vancetope.tenancy.models import Project

FINISHED = frozenset(
    {RunStatus.COMPLETED, RunStatus.COMPLETED_PARTIAL, RunStatus.BLOCKED, RunStatus.FAILED}
)
# The status of a run that is not stored yet.
NEW = ""


class RunCall(StrEnum):
    START = "start"
    FINISH = "finish"
    WAKE = "wake"
    STORE = "store"
    REST = "rest"


# The table above, as the shared machine's rules (vancetope/statemachine.py). A call whose
# `to` is None leads to the outcome its caller names, one of OUTCOMES[call].
S = RunStatus
TRANSITIONS: dict[RunCall, statemachine.Rule[RunStatus]] = {
    RunCall.START: statemachine.Rule(frozenset({NEW}), S.RUNNING),
    RunCall.FINISH: statemachine.Rule(frozenset({S.RUNNING}), None),
    RunCall.WAKE: statemachine.Rule(frozenset({S.BLOCKED}), S.RUNNING),
    RunCall.STORE: statemachine.Rule(frozenset({NEW}), None),
    RunCall.REST: statemachine.Rule(frozenset({S.RUNNING}), None),
}
OUTCOMES: dict[RunCall, frozenset[RunStatus]] = {
    RunCall.FINISH: FINISHED,
    RunCall.STORE: FINISHED | {S.RUNNING},
    RunCall.REST: FINISHED,
}


def source(call: RunCall) -> str:
    """The one status `call` moves a run from (its compare-and-swap's)."""
    (status,) = TRANSITIONS[call].allowed_from
    return status


def target(call: RunCall, outcome: RunStatus | None = None) -> RunStatus:
    """The status `call` leads to: the table's, or the caller's `outcome` where the table
    allows a choice (a programming error otherwise)."""
    rule = TRANSITIONS[call]
    if rule.to is not None:
        return rule.to
    assert outcome in OUTCOMES[call], f"{call.value} cannot lead to {outcome}"
    return outcome


def start(run: RunLog, announce: Callable[[RunLog], None]) -> RunLog:
    """Store a new run `running`, with its first record row, and announce it (in the caller's
    transaction if there is one: no savepoint, two statements fewer)."""
    run.status = target(RunCall.START)
    with transaction.atomic(savepoint=False):
        # fastsql: a webhook delivery starts a run each (bench/webhooks.py).
        fastsql.insert([run], returning_pk=True)
        fastsql.insert([RunTransition(run=run, from_status=NEW, to_status=run.status)])
        announce(run)
    return run


def finish(
    run: RunLog,
    to_status: RunStatus,
    changes: dict[str, Any],
    announce: Callable[[RunLog], None],
    detail: str = "",
) -> bool:
    """running → `to_status` with `changes`, inside the caller's transaction."""
    to_status = target(RunCall.FINISH, to_status)
    from_status = source(RunCall.FINISH)
    written = {**changes, "status": to_status, "finished_at": timezone.now()}
    moved = fastsql.update(RunLog, "{id} = %s AND {status} = %s", [run.pk, from_status], written)
    if moved != 1:
        return False
    for name, value in written.items():
        setattr(run, name, value)
    counted = [name for name, value in written.items() if isinstance(value, fastsql.Add)]
    if counted:
        run.refresh_from_db(fields=counted)  # written as sums: their stored values
    transition = RunTransition(run=run, from_status=from_status, to_status=to_status, detail=detail)
    fastsql.insert([transition])
    announce(run)
    metrics.run_finished(run.trigger_type, to_status)
    return True


def wake(run: RunLog, at: datetime, detail: str = "") -> bool:
    """blocked → running (at `at`, when its process left BLOCKED), inside the caller's
    transaction; False, and nothing written, unless the run was blocked."""
    from_status, to_status = source(RunCall.WAKE), target(RunCall.WAKE)
    record = RunTransition(
        run=run, from_status=from_status, to_status=to_status, detail=detail, at=at
    )
    written = {"status": to_status, "finished_at": None}
    return statemachine.move(run, from_status, written, record)


def wake_latest(process_pk: int, trigger: str, latest: str) -> tuple[RunLog, str] | None:
    """A person's run that ended blocked goes on when its process wakes (blocked → running,
    in place, inside the lane's commit): the latest run of the process (`latest`: the WHERE
    naming it, with the process and trigger as its parameters), if it is blocked. The run and
    its project's slug, or None. One statement."""
    from_status, to_status = source(RunCall.WAKE), target(RunCall.WAKE)
    where = f"{latest} AND {{status}} = %s"
    found = fastsql.update_returning(
        RunLog,
        where,
        [process_pk, trigger, from_status],
        {"status": to_status, "finished_at": None},
        also=[("project_slug", project_slug_sql())],
    )
    if not found:
        return None
    run = found[0]
    return run, run.__dict__.pop("project_slug")


def store(run: dict[str, Any], status: RunStatus) -> dict[str, Any]:
    """A person's new run, as the lane's commit is about to INSERT it (its fields by name):
    `running`, or already finished by the commit that ends its only turn."""
    run["status"] = status = target(RunCall.STORE, status)
    if status in FINISHED:
        metrics.run_finished(str(run.get("trigger_type", "")), status)
    return run


def rest(run_pk: int, to_status: RunStatus, changes: dict[str, Any]) -> tuple[RunLog, str] | None:
    """A person's run, running → `to_status`, in place (inside the lane's commit): the run as
    it is now and its project's slug (its `run` event names the project), or None when it was
    not running. One statement."""
    written = {**changes, "status": target(RunCall.REST, to_status)}
    where = "{id} = %s AND {status} = %s"
    also = [("project_slug", project_slug_sql())]
    found = fastsql.update_returning(
        RunLog, where, [run_pk, source(RunCall.REST)], written, also=also
    )
    if not found:
        return None
    run = found[0]
    metrics.run_finished(run.trigger_type, to_status)
    return run, run.__dict__.pop("project_slug")


def project_slug_sql() -> str:
    """The slug of a run's project, as a scalar subquery beside a statement about the run's
    row (a person's run's `run` event names its project)."""
    slug = fastsql.sql(Project, "(SELECT {slug} FROM {table} WHERE {id} = ")
    return f"{slug}{fastsql.table(RunLog)}.{fastsql.col(RunLog, 'project')})"
