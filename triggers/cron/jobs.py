"""Cron jobs: their schedule, their body's check, and the one function that stores a job with
its django-celery-beat PeriodicTask (firing is in triggers/cron/fire.py).

A body is docs/protocol.md's "Cron job": `{name?, projectId?, schedule, timezone, enabled,
overlap?, action}`. The schedule is five cron fields, checked by the libraries beat itself uses
(python-crontab through django-celery-beat's validator, then celery's crontab), described by
cron-descriptor; the time zone is an IANA name; the action is checked by its model
(triggers/cron/actions.py). Every problem is a 400 naming its field.

`save_job` is the only writer of a job and its PeriodicTask (REST and the admin both call it):
it saves the PeriodicTask with `.save()`, whose PeriodicTasks.changed mark makes a running
DatabaseScheduler reload its schedule, so an edit takes effect without restarting beat. A bulk
`update()` would not set that mark, which is why nothing here uses one on PeriodicTask.
"""

from __future__ import annotations

import json
import zoneinfo
from datetime import datetime, timedelta
from typing import Any

from celery.schedules import crontab
from cron_descriptor import get_description
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from django_celery_beat.tzcrontab import TzAwareCrontab
from django_celery_beat.validators import crontab_validator

from triggers.cron.actions import checked_action
from triggers.models import CronJob, CronOverlap
from vancetope.errors import BadRequest
from vancetope.ids import get_by_public_id
from vancetope.tenancy.models import Project
from vancetope.tenancy.services import (
    get_visible_project,
    require_project_admin,
    visible_projects,
)

# The Celery task a job's PeriodicTask runs (triggers/tasks.py).
FIRE_TASK = "triggers.fire_cron"
FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
BODY_KEYS = {"name", "projectId", "schedule", "timezone", "enabled", "overlap", "action"}
# How far back `due_minute` looks for the minute a late firing was due in.
DUE_LOOKBACK = timedelta(days=1)


# --- the schedule --------------------------------------------------------------------------------


def _field(value: str, step: str) -> str:
    """One cron field of the pattern below: `*`, `*/step`, or a list of values."""
    return f"(\\*|\\*/({step})|({value})(,({value}))*)"


# Schedules as the OpenAPI document states them: five fields of a narrower grammar than
# cron_fields reads (no ranges, one space between fields), every text of which it takes.
SCHEDULE_PATTERN = "^{}$".format(
    " ".join(
        (
            _field("[0-5]?[0-9]", "[1-9]|[1-5][0-9]"),  # minute
            _field("[01]?[0-9]|2[0-3]", "[1-9]|1[0-9]|2[0-3]"),  # hour
            _field("[1-9]|[12][0-9]|3[01]", "[1-9]|[12][0-9]|3[01]"),  # day of the month
            _field("[1-9]|1[0-2]", "[1-9]|1[0-2]"),  # month
            _field("[0-6]", "[1-6]"),  # day of the week
        )
    )
)
# The time zones a job takes (zone() reads any of them).
TIME_ZONES = sorted(zoneinfo.available_timezones())


def cron_fields(schedule: Any) -> dict[str, str]:
    """The five fields of a cron schedule by name, checked; a 400 naming `schedule`."""
    if not isinstance(schedule, str) or not schedule.strip():
        raise BadRequest.naming("schedule", "must be five cron fields, like '*/5 * * * *'")
    parts = schedule.split()
    if len(parts) != len(FIELDS):
        raise BadRequest.naming(
            "schedule",
            f"must be five cron fields (minute hour day month weekday), not {schedule!r}",
        )
    try:
        crontab_validator(" ".join(parts))
        crontab(**dict(zip(FIELDS, parts, strict=True)))
    except Exception as exc:
        raise BadRequest.naming(
            "schedule", f"{schedule!r} is not a valid cron schedule: {exc}"
        ) from exc
    return dict(zip(FIELDS, parts, strict=True))


def zone(name: Any) -> zoneinfo.ZoneInfo:
    if not isinstance(name, str) or not name:
        raise BadRequest.naming("timezone", "must be an IANA time zone name, like Europe/Berlin")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise BadRequest.naming("timezone", f"{name!r} is not a known time zone") from exc


def schedule_of(job: CronJob) -> TzAwareCrontab:
    """The job's schedule as beat evaluates it (django-celery-beat's time-zone aware crontab)."""
    return TzAwareCrontab(**cron_fields(job.schedule), tz=zone(job.time_zone))


def describe(job: CronJob) -> str:
    return f"{get_description(' '.join(job.schedule.split()))} ({job.time_zone})"


def next_run_at(job: CronJob, now: datetime | None = None) -> datetime | None:
    """When beat fires it next (None while disabled), as the library computes it."""
    if not job.enabled:
        return None
    now = now or timezone.now()
    estimate = now + schedule_of(job).remaining_estimate(now)
    # The estimate lands a moment short of the due minute; cron minutes are whole.
    return (estimate + timedelta(seconds=30)).replace(second=0, microsecond=0)


def due_minute(job: CronJob, now: datetime | None = None) -> datetime:
    """The minute of the schedule this firing is for: the latest minute at or before `now`
    that the schedule matches (by the crontab's own expanded fields), so that a task beat sent
    at 09:00 and a worker ran at 09:00:40 is the 09:00 firing, whichever beat sent it."""
    local = (now or timezone.now()).astimezone(zone(job.time_zone)).replace(second=0, microsecond=0)
    spec = schedule_of(job)
    moment, earliest = local, local - DUE_LOOKBACK
    while moment >= earliest:
        if (
            moment.minute in spec.minute
            and moment.hour in spec.hour
            and moment.day in spec.day_of_month
            and moment.month in spec.month_of_year
            and moment.isoweekday() % 7 in spec.day_of_week
        ):
            return moment.astimezone(zoneinfo.ZoneInfo("UTC"))
        moment -= timedelta(minutes=1)
    return local.astimezone(zoneinfo.ZoneInfo("UTC"))


# --- the body ------------------------------------------------------------------------------------


def apply_body(owner: Any, body: Any, job: CronJob) -> CronJob:
    """Check `body` (all of a job, or the fields a PATCH changes) and set it on `job`, unsaved.
    Nothing is written; a problem is a 400 naming the field."""
    if not isinstance(body, dict):
        raise BadRequest.naming("body", "must be an object")
    for key in body:
        if key not in BODY_KEYS:
            raise BadRequest.naming(key, "is not a field of a cron job")
    creating = job.pk is None
    for required in ("schedule", "action") if creating else ():
        if required not in body:
            raise BadRequest.naming(required, "is required")
    if "name" in body:
        if not isinstance(body["name"], str) or len(body["name"]) > 100:
            raise BadRequest.naming("name", "must be a text of at most 100 characters")
        job.name = body["name"]
    if "schedule" in body:
        job.schedule = " ".join(cron_fields(body["schedule"]).values())
    if "timezone" in body:
        job.time_zone = zone(body["timezone"]).key
    if "enabled" in body:
        if not isinstance(body["enabled"], bool):
            raise BadRequest.naming("enabled", "must be true or false")
        job.enabled = body["enabled"]
    if "overlap" in body:
        if body["overlap"] not in CronOverlap.values:
            raise BadRequest.naming("overlap", f"must be one of {', '.join(CronOverlap.values)}")
        job.overlap = body["overlap"]
    named = _named_project(owner, body.get("projectId"))
    if "action" in body:
        job.action, project = checked_action(owner, body["action"])
        if named is not None and project is not None and project.pk != named.pk:
            raise BadRequest.naming(
                "projectId", "is not the project of the action's process/workflow"
            )
        job.project = named or project or job_project(owner, job)
    elif named is not None and named.pk != job.project_id:
        raise BadRequest.naming(
            "projectId", "a job's project follows its action; change the action"
        )
    return job


def _named_project(owner: Any, project: Any) -> Project | None:
    if project is None:
        return None
    if not isinstance(project, str):
        raise BadRequest.naming("projectId", "must be a project id like proj_x")
    return get_visible_project(owner, project)


def job_project(owner: Any, job: CronJob) -> Project:
    if job.project_id is not None:
        return job.project
    seen = list(visible_projects(owner)[:2])
    if len(seen) != 1:
        raise BadRequest.naming("projectId", "is required (you see several projects)")
    return seen[0]


# --- storing: the one path to a job and its PeriodicTask ---------------------------------------


def save_job(job: CronJob) -> CronJob:
    """Store the job and its PeriodicTask (and its crontab) in one transaction."""
    fields = cron_fields(job.schedule)
    tz = zone(job.time_zone)
    with transaction.atomic():
        job.updated_at = timezone.now()
        job.save()
        schedule, _ = CrontabSchedule.objects.get_or_create(**fields, timezone=tz)
        task = job.periodic_task or PeriodicTask(name=f"cron job {job.public_id}", task=FIRE_TASK)
        task.crontab = schedule
        task.args = json.dumps([job.pk])
        task.enabled = job.enabled
        task.description = f"{job.public_id}: {job.action_type} ({job.name or job.schedule})"
        # `.save()`, never `update()`: it marks PeriodicTasks changed, so beat reloads.
        task.save()
        if job.periodic_task_id != task.pk:
            job.periodic_task = task
            CronJob.objects.filter(pk=job.pk).update(periodic_task=task)
    return job


def remove_job(job: CronJob) -> None:
    """Delete the job and its PeriodicTask (`.delete()`: beat hears of it too)."""
    with transaction.atomic():
        task = job.periodic_task
        job.delete()
        if task is not None:
            task.delete()


# --- the use cases -------------------------------------------------------------------------------


def visible_jobs(user: Any) -> QuerySet[CronJob]:
    """The user's own jobs (whose runs are theirs); another user's are never seen."""
    if not user.is_authenticated:
        return CronJob.objects.none()
    return CronJob.objects.filter(owner=user).select_related("project", "last_run")


def get_visible_job(user: Any, job_id: str) -> CronJob:
    return get_by_public_id(visible_jobs(user), "cron", job_id, "cron job")


def create_job(user: Any, body: Any) -> CronJob:
    job = apply_body(user, body, CronJob(owner=user))
    require_project_admin(user, job_project(user, job), "create cron jobs")
    return save_job(job)


def update_job(user: Any, job_id: str, body: Any) -> CronJob:
    job = get_visible_job(user, job_id)
    require_project_admin(user, job_project(user, job), "change cron jobs")
    job = apply_body(user, body, job)
    # A job moved to another project needs its admin too.
    require_project_admin(user, job_project(user, job), "change cron jobs")
    return save_job(job)


def delete_job(user: Any, job_id: str) -> None:
    job = get_visible_job(user, job_id)
    require_project_admin(user, job_project(user, job), "delete cron jobs")
    remove_job(job)
