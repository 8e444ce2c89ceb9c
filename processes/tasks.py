"""Celery tasks: thin, take ids, call the service."""

from __future__ import annotations

from celery import shared_task

from processes import services


@shared_task(name="processes.drive_lane")
def drive_lane_task(process_id: int) -> int:
    """Drain the pending messages of one process; returns how many turns ran."""
    return services.drive_lane(process_id)
