"""Celery tasks: thin, take ids, call the service."""

from __future__ import annotations

from celery import shared_task

from processes.actions.sessions import suspend_idle_sessions


# The name it had in sessions_app: the beat rows of existing installations name it so.
@shared_task(name="sessions_app.sweep_idle_sessions")
def sweep_idle_sessions_task() -> int:
    """Periodic (a django-celery-beat row, editable in the admin): the idle sweep."""
    return suspend_idle_sessions()
