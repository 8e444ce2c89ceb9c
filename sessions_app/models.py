"""Sessions (one per client connection lifetime) and the events streamed to their clients."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from protocol.vocabulary import (
    ClientType,
    DisconnectPolicy,
    SessionStatus,
    SuspendCause,
    SuspendPolicy,
)
from vancetope.tenancy.models import Project
from vancetope.transition_record import TransitionRecord

__all__ = [
    "ClientType",
    "DisconnectPolicy",
    "SessionStatus",
    "SuspendCause",
    "SuspendPolicy",
    "Session",
    "SessionEvent",
    "SessionTransition",
    "HUMAN_CLIENT_TYPES",
    "SYSTEM_CLIENT_TYPES",
]


HUMAN_CLIENT_TYPES = {ClientType.CLI, ClientType.DESKTOP, ClientType.MOBILE, ClientType.WEB}
# The Brain's own clients: only the Brain opens their sessions (system=True).
SYSTEM_CLIENT_TYPES = {
    ClientType.CRON,
    ClientType.WEBHOOK,
    ClientType.BRAIN_LINKER,
    ClientType.WORKFLOW,
    ClientType.SERVICE,
}


class Session(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="brain_sessions"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    client_type = models.CharField(max_length=16, choices=ClientType.choices)
    is_human = models.BooleanField(default=True)
    system = models.BooleanField(default=False)
    # How a system session is shown: `_agrajag` for agrajag's (its owner is `_system`).
    display_name = models.CharField(max_length=100, blank=True)
    status = models.CharField(
        max_length=16, choices=SessionStatus.choices, default=SessionStatus.OPEN
    )
    suspend_cause = models.CharField(max_length=16, choices=SuspendCause.choices, blank=True)
    on_disconnect = models.CharField(
        max_length=16, choices=DisconnectPolicy.choices, default=DisconnectPolicy.SUSPEND
    )
    on_idle = models.CharField(
        max_length=16, choices=DisconnectPolicy.choices, default=DisconnectPolicy.SUSPEND
    )
    idle_timeout = models.PositiveIntegerField(default=3600, help_text="seconds")
    on_suspend = models.CharField(
        max_length=16, choices=SuspendPolicy.choices, default=SuspendPolicy.KEEP
    )
    machine_id = models.CharField(max_length=200, blank=True)
    working_dir = models.CharField(max_length=1000, blank=True)
    user_home = models.CharField(max_length=1000, blank=True)
    os_user = models.CharField(max_length=200, blank=True)
    client_tools = models.JSONField(default=list, blank=True)
    chat_process = models.ForeignKey(
        "processes.ThinkProcess",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    # The seq of the last event written for this session; events are numbered 1, 2, 3, …
    last_seq = models.PositiveBigIntegerField(default=0)
    # Which bind of a client the session is at: every resume raises it. A socket that leaves
    # applies the disconnect policy only to the bind it made, so a reloaded page's new socket,
    # resumed before the old socket's disconnect is handled, keeps its session open.
    binding = models.PositiveBigIntegerField(default=0)
    last_activity_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "status"]), models.Index(fields=["status"])]

    def __str__(self) -> str:
        return self.public_id

    @property
    def public_id(self) -> str:
        return f"sess_{self.pk}"

    @property
    def group_name(self) -> str:
        """The channel-layer group every socket bound to this session listens on."""
        return f"session.{self.pk}"


def event_frame(seq: int, event: str, data: Any) -> dict[str, object]:
    """An event's frame as the socket sends it: a stored event's (SessionEvent.as_frame), and
    one's being stored (sessions_app.events.record_events)."""
    return {"type": "event", "seq": seq, "event": event, "data": data}


class SessionEvent(models.Model):
    """An event sent to the session's client, kept so a reconnecting client can replay it."""

    # No index of its own: the unique (session, seq) index leads with it (a page less to write
    # per event).
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    seq = models.PositiveBigIntegerField()
    event = models.CharField(max_length=50)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    # Part of a turn that was undone: kept, but left out of replays (events_since).
    undone = models.BooleanField(default=False)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="uniq_event_seq_per_session")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.event}"

    def as_frame(self) -> dict[str, object]:
        return event_frame(self.seq, self.event, self.data)

    def frame_text(self) -> str:
        """The frame as the socket sends it (JSON text)."""
        return json.dumps(self.as_frame())


class SessionTransition(TransitionRecord):
    """One change of a session's status, written by sessions_app.transitions with the change."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="transitions")
    cause = models.CharField(max_length=16, blank=True)

    class Meta:
        ordering = ["session", "at", "pk"]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.from_status} -{self.call}-> {self.to_status}"
