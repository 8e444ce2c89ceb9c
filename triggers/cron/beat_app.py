"""django-celery-beat as the operators' admin shows it: its app labelled as the scheduler's
internals, so nobody takes its Periodic tasks for the place to schedule work (Cron jobs, in
Triggers, are; each keeps its scheduler entry in step). Installed in place of
`django_celery_beat` in INSTALLED_APPS (the same label: its tables and migrations are
unchanged); triggers/cron/admin.py hides its schedule models and makes its entries read-only."""

from __future__ import annotations

from django_celery_beat.apps import BeatConfig


class SchedulerInternalsConfig(BeatConfig):
    verbose_name = "Scheduler internals (django-celery-beat): schedule work with Cron jobs"
