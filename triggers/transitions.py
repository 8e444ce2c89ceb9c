"""The one writer of a run's status, and its table.

| call   | allowed in | result                                             |
| ------ | ---------- | -------------------------------------------------- |
| start  | (new run)  | running                                            |
| finish | running    | completed, completed_partial, blocked or failed    |

`finish` writes the outcome by compare-and-swap on `running` (a run is finished once, however
many of its processes settle at the same time), records a RunTransition row and announces the
run; False, and nothing written, if the run was finished already.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from triggers.models import RunLog, RunStatus, RunTransition
from vancetope.infra import fastsql

FINISHED = frozenset(
    {RunStatus.COMPLETED, RunStatus.COMPLETED_PARTIAL, RunStatus.BLOCKED, RunStatus.FAILED}
)


def start(run: RunLog, announce: Callable[[RunLog], None]) -> RunLog:
    """Store a new run `running`, with its first record row, and announce it."""
    run.status = RunStatus.RUNNING
    with transaction.atomic():
        # fastsql: a webhook delivery starts a run each (bench/webhooks.py).
        fastsql.insert([run], returning_pk=True)
        fastsql.insert([RunTransition(run=run, from_status="", to_status=RunStatus.RUNNING)])
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
    assert to_status in FINISHED
    written = {**changes, "status": to_status, "finished_at": timezone.now()}
    moved = fastsql.update(
        RunLog, "{id} = %s AND {status} = %s", [run.pk, RunStatus.RUNNING], written
    )
    if moved != 1:
        return False
    for name, value in written.items():
        setattr(run, name, value)
    transition = RunTransition(
        run=run, from_status=RunStatus.RUNNING, to_status=to_status, detail=detail
    )
    fastsql.insert([transition])
    announce(run)
    return True
