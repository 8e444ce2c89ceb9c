"""Waking a lane: after the commit, hand the process to a worker that drains its messages."""

from __future__ import annotations

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
