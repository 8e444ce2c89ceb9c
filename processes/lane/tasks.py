"""Celery tasks: thin, take ids, call the service."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import task_postrun, worker_shutting_down
from django.db import close_old_connections

from processes.lane.driver import drive_lane
from processes.lane.worker import request_stop
from processes.recovery import LOST_WAKE_AFTER, recover_lanes
from vancetope.errors import Conflict


@shared_task(name="processes.drive_lane")
def drive_lane_task(process_id: int) -> int:
    """Drain the pending messages of one process; returns how many turns ran."""
    return drive_lane(process_id)


@shared_task(name="processes.start_process")
def start_process_task(process_id: int) -> str:
    """Start a child its parent spawned (autostart); returns the status it reached. A child
    that was started meanwhile (or stopped) is left as it is."""
    from processes.actions import lifecycle

    try:
        # Its first turn (the deferred goal) runs here, in the lane the start took.
        started = lifecycle.start_process(process_id, lambda lease: drive_lane(process_id, lease))
        return str(started.status)
    except Conflict as refused:
        return f"not started: {refused.message}"


@shared_task(name="processes.sweep_lanes")
def sweep_lanes_task() -> dict[str, int]:
    """Periodic: recover lanes whose worker died, wake processes whose wake-up got lost."""
    report = recover_lanes(min_pending_age=LOST_WAKE_AFTER)
    return {"recovered": report.recovered, "woken": report.woken}


@worker_shutting_down.connect
def stop_turns_at_next_boundary(**kwargs: Any) -> None:
    """SIGTERM to a Celery worker: stop running turns at their next boundary, so the warm
    shutdown finishes quickly and leases are released."""
    request_stop()


@task_postrun.connect
def drop_old_connections(**kwargs: Any) -> None:
    """After each task, as Django after each request: close this thread's connection only if
    it is broken or older than CONN_MAX_AGE (Celery's own closing is turned off by
    CELERY_DB_REUSE_MAX, so a turn does not begin with a new database connection)."""
    close_old_connections()
