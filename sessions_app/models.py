"""Sessions (one per client connection lifetime) and the events streamed to their clients."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models
from django.utils import timezone

from vancetope.tenancy.models import Project


class ClientType(models.TextChoices):
    CLI = "cli"  # the vance terminal client; brings shell, filesystem and git tools
    DESKTOP = "desktop"  # desktop app; brings local tools
    MOBILE = "mobile"  # phone; few tools, short sessions
    WEB = "web"  # browser in interactive mode; no local tools
    CRON = "cron"  # scheduled system client
    WEBHOOK = "webhook"  # system client opened by an incoming webhook
    BRAIN_LINKER = "brain_linker"  # internal knowledge-graph analysis client
    WORKFLOW = "workflow"  # system client of a workflow run started over REST


HUMAN_CLIENT_TYPES = {ClientType.CLI, ClientType.DESKTOP, ClientType.MOBILE, ClientType.WEB}


class SessionStatus(models.TextChoices):
    OPEN = "OPEN"  # a client is (or may be) bound; processes may run
    SUSPENDED = "SUSPENDED"  # halted by the system; resumable by the same client fingerprint
    CLOSED = "CLOSED"  # terminal; all processes stopped


class SuspendCause(models.TextChoices):
    DISCONNECT = "DISCONNECT"  # the client went away and on_disconnect is SUSPEND
    IDLE = "IDLE"  # the idle sweep found no activity for idle_timeout
    SHUTDOWN = "SHUTDOWN"  # the Brain was shut down
    MANUAL = "MANUAL"  # an operator suspended it


class DisconnectPolicy(models.TextChoices):
    SUSPEND = "SUSPEND"  # suspend the session and cascade suspend to its processes
    KEEP_OPEN = "KEEP_OPEN"  # keep processes running until the idle sweep suspends
    CLOSE = "CLOSE"  # close the session and stop its processes


class Session(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="brain_sessions"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    client_type = models.CharField(max_length=16, choices=ClientType.choices)
    is_human = models.BooleanField(default=True)
    system = models.BooleanField(default=False)
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
    on_suspend = models.CharField(max_length=16, default="KEEP", blank=True)
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


class SessionEvent(models.Model):
    """An event sent to the session's client, kept so a reconnecting client can replay it."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
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
        return {"type": "event", "seq": self.seq, "event": self.event, "data": self.data}

    def frame_text(self) -> str:
        """The frame as the socket sends it (JSON text)."""
        return json.dumps(self.as_frame())


class SessionTransition(models.Model):
    """One change of a session's status, written by sessions_app.transitions with the change."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="transitions")
    call = models.CharField(max_length=16)
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    cause = models.CharField(max_length=16, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "at", "pk"]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.from_status} -{self.call}-> {self.to_status}"
