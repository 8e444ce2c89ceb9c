"""Celery tasks: thin, take ids, call the service."""

from __future__ import annotations

from celery import shared_task

from triggers.cron.fire import fire, fire_task_moment
from triggers.webhooks.inbound import prune_trigger_events


@shared_task(name="triggers.fire_cron")
def fire_cron(job_id: int, scheduled_for: str | None = None) -> str:
    """A cron job's PeriodicTask (triggers/cron/jobs.py keeps it in step): claim and run this
    firing once; `scheduled_for` (ISO 8601) defaults to the schedule's due minute."""
    firing = fire(job_id, fire_task_moment(scheduled_for))
    if firing is None:
        return "duplicate"
    return f"{firing.outcome}: {firing.run.public_id if firing.run else firing.reason}"


@shared_task(name="triggers.prune_trigger_events")
def prune_trigger_events_task() -> int:
    """Periodic (a django-celery-beat row, editable in the admin): drop TriggerEvents past
    their retention."""
    return prune_trigger_events()
