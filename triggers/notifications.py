"""Notifications: stored for a user and sent as `notification {id, text, level, runId?,
processId?}` events to their open sessions (the event every client already shows); listed and
marked read over REST."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from protocol.outbound import NotificationEvent, event
from sessions_app.events import emit_event
from sessions_app.models import Session, SessionStatus
from triggers.models import Notification, RunLog
from vancetope.errors import BadRequest
from vancetope.ids import get_by_public_id
from vancetope.tenancy.models import Project


def notify(
    user: Any,
    project: Project,
    text: str,
    level: str = "info",
    *,
    run: RunLog | None = None,
    process_id: str = "",
) -> Notification:
    """Store the notification and send it to every open session of the user (in session
    order, so concurrent writers lock the sessions in the same order)."""
    with transaction.atomic():
        notification = Notification.objects.create(
            user=user,
            project=project,
            text=text,
            level=level,
            run=run,
            process_public_id=process_id,
        )
        data = event(
            NotificationEvent(
                id=notification.public_id,
                text=text,
                level=level,  # type: ignore[arg-type]
                runId=run.public_id if run is not None else None,
                processId=process_id or None,
            )
        )
        sessions = Session.objects.filter(owner=user, status=SessionStatus.OPEN)
        for session_id in sessions.order_by("pk").values_list("pk", flat=True):
            emit_event(session_id, *data)
    return notification


def visible_notifications(user: Any) -> QuerySet[Notification]:
    if not user.is_authenticated:
        return Notification.objects.none()
    return Notification.objects.filter(user=user).select_related("project")


def filtered_notifications(user: Any, *, unread: str | None = None) -> QuerySet[Notification]:
    rows = visible_notifications(user)
    if unread:
        if unread not in {"true", "false"}:
            raise BadRequest.naming("unread", "must be true or false")
        rows = rows.filter(read_at__isnull=unread == "true")
    return rows.order_by("-pk")


def mark_read(user: Any, notification_id: str) -> Notification:
    """Mark one of the user's notifications read (again: it stays read, at its first time)."""
    rows = visible_notifications(user)
    notification = get_by_public_id(rows, "ntf", notification_id, "notification")
    if notification.read_at is None:
        now = timezone.now()
        Notification.objects.filter(pk=notification.pk, read_at__isnull=True).update(read_at=now)
        notification.read_at = now
    return notification


def mark_all_read(user: Any) -> int:
    """Mark every unread notification of the user read (now); how many were unread."""
    return visible_notifications(user).filter(read_at__isnull=True).update(read_at=timezone.now())


def unread_count(user: Any) -> int:
    return visible_notifications(user).filter(read_at__isnull=True).count()
