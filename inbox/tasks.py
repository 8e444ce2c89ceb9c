"""Celery tasks: thin, call the service."""

from __future__ import annotations

from celery import shared_task

from inbox.services import expire_due_items


@shared_task(name="inbox.expire_items")
def expire_items_task() -> int:
    """Periodic (a django-celery-beat row, editable in the admin): items past `expires_at`."""
    return expire_due_items()
