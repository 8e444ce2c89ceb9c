"""Tool rows: every invocation (ToolCall), per-project MCP servers, tool health and the queue of
ambiguous failures waiting for agrajag."""

from __future__ import annotations

from django.core.validators import URLValidator
from django.db import models
from django.utils import timezone

from vancetope.tenancy.models import Project


class Location(models.TextChoices):
    SERVER = "server"  # runs inside the Brain
    CLIENT = "client"  # runs on the session's bound client, over its WebSocket
    MCP = "mcp"  # runs on an MCP server configured for the project


class Safety(models.TextChoices):
    SAFE_PROBE = "SAFE_PROBE"  # reads only; agrajag may call it to probe a tool's health
    MUTATING = "MUTATING"  # changes something; never used as a probe


class CallStatus(models.TextChoices):
    PENDING = "PENDING"  # sent to the client, waiting for its tool-result
    OK = "OK"  # ran and answered
    FAILED = "FAILED"  # ran (or was sent) and failed; see error and classification
    REFUSED = "REFUSED"  # outside the process's pool or arguments invalid: never ran
    TIMED_OUT = "TIMED_OUT"  # no answer within the timeout; a late result is refused
    CANCELLED = "CANCELLED"  # the turn was interrupted while waiting; a late result is refused
    # Journaled as started with no result when its turn was retried (the Brain stopped while
    # it ran): whether it ran is not known, and its person decides (vancetope/tools/replay.py).
    UNCERTAIN = "UNCERTAIN"


class Decision(models.TextChoices):
    """What the person said of an UNCERTAIN call (the inbox APPROVAL it asked)."""

    RUN_AGAIN = "run-again"  # approved: the retried turn runs it again
    TREAT_AS_DONE = "treat-as-done"  # rejected: the turn goes on as if it had run


class ToolCall(models.Model):
    """One invocation through the dispatcher, whatever kind of tool it was: the audit log, and
    for client tools the row the waiting lane polls (no transaction stays open meanwhile)."""

    process = models.ForeignKey(
        "processes.ThinkProcess", on_delete=models.CASCADE, related_name="tool_calls"
    )
    session = models.ForeignKey(
        "brain_sessions.Session", on_delete=models.CASCADE, related_name="tool_calls"
    )
    tool = models.CharField(max_length=200)
    location = models.CharField(max_length=8, choices=Location.choices)
    arguments = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=CallStatus.choices)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    # What the synchronous checker made of a failure (auth, not-found, …, ambiguous).
    classification = models.CharField(max_length=32, blank=True)
    # Passed to a tool that declares it may be repeated, with every run of this call (MCP
    # `_meta`, a client tool's `tool-call` event): the same key when a retried turn runs it
    # again, so the tool can tell a repeat from a new call.
    idempotency_key = models.CharField(max_length=64, blank=True)
    # For an UNCERTAIN call: what its person decided ("" until they have).
    decision = models.CharField(max_length=16, choices=Decision.choices, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["session", "status"])]

    def __str__(self) -> str:
        return f"{self.public_id} {self.tool} ({self.status})"

    @property
    def public_id(self) -> str:
        return f"call_{self.pk}"


class McpTransport(models.TextChoices):
    STDIO = "stdio"  # the Brain starts `command args…` and talks over its stdin/stdout
    HTTP = "http"  # streamable HTTP at `url`


class McpServer(models.Model):
    """An MCP server whose tools a project's processes may use (if their pool names them)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="mcp_servers")
    name = models.SlugField(max_length=100)
    transport = models.CharField(
        max_length=8, choices=McpTransport.choices, default=McpTransport.STDIO
    )
    command = models.CharField(max_length=1000, blank=True)
    args = models.JSONField(default=list, blank=True)
    env = models.JSONField(default=dict, blank=True)
    # A CharField with a URL validator: the admin's URLField would guess a scheme.
    url = models.CharField(
        max_length=1000, blank=True, validators=[URLValidator(schemes=["http", "https"])]
    )
    # Put before every tool name of this server, for servers whose names would collide.
    tool_prefix = models.CharField(max_length=50, blank=True)
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "name"]
        verbose_name = "MCP server"
        verbose_name_plural = "MCP servers"
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="uniq_mcp_server_name"),
            models.CheckConstraint(
                condition=(
                    models.Q(transport="stdio") & ~models.Q(command="")
                    | models.Q(transport="http") & ~models.Q(url="")
                ),
                name="mcp_server_has_command_or_url",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project.public_id}/{self.name}"


class HealthStatus(models.TextChoices):
    UP = "UP"  # works (a probe succeeded, or the failure was the caller's)
    DEGRADED = "DEGRADED"  # works sometimes (rate limits, slow)
    DOWN = "DOWN"  # does not work; listings mark it


class ToolHealth(models.Model):
    """The last verdict about one tool in one project, written by agrajag."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tool_health")
    tool = models.CharField(max_length=200)
    status = models.CharField(max_length=12, choices=HealthStatus.choices)
    classification = models.CharField(max_length=32)
    evidence = models.TextField(blank=True)
    checked_at = models.DateTimeField(default=timezone.now)
    checked_by = models.ForeignKey(
        "processes.ThinkProcess", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["project", "tool"]
        verbose_name_plural = "tool health"
        constraints = [models.UniqueConstraint(fields=["project", "tool"], name="uniq_tool_health")]

    def __str__(self) -> str:
        return f"{self.tool}: {self.status}"


class ToolHealthRevision(models.Model):
    """The one row (id 1) whose `revision` every write of a ToolHealth row raises (a signal, in
    the writer's transaction): a worker keeps each project's down tools for as long as the
    revision its lane's lease read is the same (vancetope/tools/health.py)."""

    revision = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"tool health revision {self.revision}"


class DiagnosisStatus(models.TextChoices):
    QUEUED = "QUEUED"  # waiting for (or being handled by) its agrajag process
    DONE = "DONE"  # agrajag wrote a verdict


class DiagnosisSource(models.TextChoices):
    CHECKER = "checker"  # the dispatcher's checker found a failure no rule explains
    EVENT = "event"  # a system event (processes/actions/service_events.py)
    STAFF = "staff"  # a staff member asked over REST (POST /api/services/{service}/runs)


class ToolDiagnosis(models.Model):
    """Ambiguous failures of one tool, coalesced: while one is open, more failures (or system
    events, or requests) about the same tool only add to its count and evidence, so one
    agrajag run handles the whole burst."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(max_length=200)
    status = models.CharField(
        max_length=8, choices=DiagnosisStatus.choices, default=DiagnosisStatus.QUEUED
    )
    failures = models.PositiveIntegerField(default=1)
    last_error = models.TextField(blank=True)
    originating_user_id = models.BigIntegerField(null=True, blank=True)
    # What opened it (what joins an open one only adds to its count).
    source = models.CharField(
        max_length=8, choices=DiagnosisSource.choices, default=DiagnosisSource.CHECKER
    )
    process = models.ForeignKey(
        "processes.ThinkProcess", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "tool diagnoses"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "tool"],
                condition=models.Q(status="QUEUED"),
                name="one_open_diagnosis_per_tool",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool} ×{self.failures} ({self.status})"


class ServiceSession(models.Model):
    """The system session of one service (e.g. agrajag) in one project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    service = models.CharField(max_length=50)
    session = models.ForeignKey(
        "brain_sessions.Session", on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "service"], name="uniq_service_session")
        ]

    def __str__(self) -> str:
        return f"{self.project.public_id}/{self.service}"
