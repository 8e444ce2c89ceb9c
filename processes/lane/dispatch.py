"""Waking a lane: after the commit, hand the process to a worker that drains its messages (or,
for a child its parent just spawned, that starts it)."""

from __future__ import annotations

import functools

from django.conf import settings
from django.db import transaction


def dispatch_drive(process_id: int) -> None:
    if settings.VANCETOPE_WORKER == "inprocess":
        from processes.lane.worker import get_worker

        get_worker().submit(process_id)
    else:
        from processes.lane.tasks import drive_lane_task

        drive_lane_task.delay(process_id)


def wake_lane(process_id: int) -> None:
    """Drive the lane once the current transaction (if any) has committed."""
    transaction.on_commit(lambda: dispatch_drive(process_id))


def dispatch_start(process_id: int) -> None:
    if settings.VANCETOPE_WORKER == "inprocess":
        from processes.lane.worker import get_worker

        get_worker().submit_start(process_id)
    else:
        from processes.lane.tasks import start_process_task

        start_process_task.delay(process_id)


def start_later(process_ids: list[int]) -> None:
    """Start these (autostart) children in their own lanes once the current transaction has
    committed: the parent's commit that recorded them."""
    for process_id in process_ids:
        transaction.on_commit(functools.partial(dispatch_start, process_id))
