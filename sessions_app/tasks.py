"""Celery tasks: thin, take ids, call the service."""

from __future__ import annotations

from celery import shared_task

from sessions_app.services import suspend_idle_sessions


@shared_task(name="sessions_app.sweep_idle_sessions")
def sweep_idle_sessions_task() -> int:
    """Periodic (a django-celery-beat row, editable in the admin): the idle sweep."""
    return suspend_idle_sessions()
