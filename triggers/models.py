"""Workflows (task-tree templates), cron jobs and their firings, run logs of system runs,
stored notifications; webhooks, their deliveries and the trigger events
every delivery leaves."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from vancetope.tenancy.models import Project


class Workflow(models.Model):
    """A task-tree template of a project (docs/protocol.md, "Workflow"); `body` is the checked
    body as JSON, `source` the text it was given as (YAML or JSON), shown back to editors."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="workflows")
    name = models.CharField(max_length=100)
    body = models.JSONField(default=dict)
    source = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="uniq_workflow_name")
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.name}"

    @property
    def public_id(self) -> str:
        return f"wf_{self.pk}"


class RunStatus(models.TextChoices):
    RUNNING = "running"  # its processes have not come to rest yet
    COMPLETED = "completed"  # everything it started finished
    COMPLETED_PARTIAL = "completed_partial"  # finished, but some tasks failed or were skipped
    BLOCKED = "blocked"  # a task waits for a person (or a client tool); see blocked_reasons
    FAILED = "failed"  # it could not run, or its process failed or was stopped


class TriggerType(models.TextChoices):
    USER = "user"  # a person's own session (a human run; a later step writes these)
    CRON = "cron"  # a cron job fired
    WEBHOOK = "webhook"  # a webhook delivery
    WORKFLOW = "workflow"  # a workflow run (REST or workflow-start)
    BRAIN_LINKER = "brain_linker"  # the knowledge-graph linker


class RunLog(models.Model):
    """One run (docs/protocol.md's run log object). Its status moves only through
    triggers/transitions.py."""

    # Whom the run is for: who sees it, who is notified. A system session's owner is _system.
    # No index of its own: the (owner, started_at) index leads with it (a page less to write
    # per run).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="run_logs", db_index=False
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="run_logs")
    session = models.ForeignKey(
        "brain_sessions.Session",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="run_logs",
    )
    # Whether the run opened its session (then it closes it when the run is over).
    owns_session = models.BooleanField(default=False)
    client_type = models.CharField(max_length=16)
    trigger_type = models.CharField(max_length=16, choices=TriggerType.choices)
    cron_id = models.CharField(max_length=40, blank=True)
    webhook_id = models.CharField(max_length=40, blank=True)
    delivery_id = models.CharField(max_length=200, blank=True)
    workflow = models.ForeignKey(
        Workflow, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    process = models.ForeignKey(
        "processes.ThinkProcess",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    # Kept when the process row is gone.
    process_public_id = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.RUNNING)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    tasks_executed = models.PositiveIntegerField(default=0)
    tasks_blocked = models.PositiveIntegerField(default=0)
    blocked_reasons = models.JSONField(default=list, blank=True)
    tokens_used = models.PositiveBigIntegerField(default=0)
    llm_calls = models.PositiveIntegerField(default=0)
    notifications_sent = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [
            models.Index(fields=["owner", "started_at"]),
            models.Index(fields=["process_public_id"]),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} ({self.trigger_type}, {self.status})"

    @property
    def public_id(self) -> str:
        return f"run_{self.pk}"


class RunTransition(models.Model):
    """One change of a run's status, written by triggers/transitions.py with the change."""

    run = models.ForeignKey(RunLog, on_delete=models.CASCADE, related_name="transitions")
    from_status = models.CharField(max_length=20)
    to_status = models.CharField(max_length=20)
    detail = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "at", "pk"]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.from_status} -> {self.to_status}"


class NotificationLevel(models.TextChoices):
    INFO = "info"
    SUCCESS = "success"
    WARNING = "warning"
    ERROR = "error"


class Notification(models.Model):
    """A message for a user, stored and sent as a `notification` event to their open
    sessions."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="notifications")
    text = models.TextField()
    level = models.CharField(
        max_length=10, choices=NotificationLevel.choices, default=NotificationLevel.INFO
    )
    run = models.ForeignKey(
        RunLog, on_delete=models.SET_NULL, null=True, blank=True, related_name="notifications"
    )
    process_public_id = models.CharField(max_length=40, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "read_at"])]

    def __str__(self) -> str:
        return f"{self.public_id} {self.level}: {self.text[:40]}"

    @property
    def public_id(self) -> str:
        return f"ntf_{self.pk}"


class CronAction(models.TextChoices):
    PROCESS_CONTINUE = "process_continue"  # continue a process within maxTasks / maxTokens
    RUN_WORKFLOW = "run_workflow"  # run a workflow with a fixed input
    BRAIN_LINKER = "brain_linker"  # the knowledge-graph linker (refused until it exists)


class CronOverlap(models.TextChoices):
    SKIP = "skip"  # a firing while the job's previous run still runs is skipped, and recorded
    ALLOW = "allow"  # every firing runs, whether or not the previous run is over


class CronJob(models.Model):
    """A schedule and an action of a project (docs/protocol.md, "Cron job"), fired by its
    django-celery-beat PeriodicTask, which triggers/cron/jobs.py keeps in step with this row."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="cron_jobs")
    # Whom its runs are for (their RunLog owner), and who is notified of them.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cron_jobs"
    )
    name = models.CharField(max_length=100, blank=True)
    # Five cron fields (minute hour day-of-month month day-of-week), checked by the libraries
    # beat itself uses (python-crontab, celery's crontab).
    schedule = models.CharField(max_length=200)
    time_zone = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    overlap = models.CharField(max_length=8, choices=CronOverlap.choices, default=CronOverlap.SKIP)
    action = models.JSONField(default=dict)
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="cron_job",
    )
    last_run = models.ForeignKey(
        RunLog, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "pk"]

    def __str__(self) -> str:
        return f"{self.public_id} {self.name or self.schedule}"

    @property
    def public_id(self) -> str:
        return f"cron_{self.pk}"

    @property
    def action_type(self) -> str:
        return str(self.action.get("type", ""))


class FiringOutcome(models.TextChoices):
    CLAIMED = "claimed"  # claimed, its action being started (or the Brain stopped meanwhile)
    RAN = "ran"  # its run was started (see run)
    SKIPPED = "skipped"  # nothing ran; reason says why (the previous run still runs)
    FAILED = "failed"  # it could not run; reason holds the error


class CronFiring(models.Model):
    """One firing of a cron job, claimed once: the unique (job, scheduled_for) row is written
    before anything runs, so a second beat or a redelivered task finds it and runs nothing."""

    job = models.ForeignKey(CronJob, on_delete=models.CASCADE, related_name="firings")
    # The due minute of the schedule this firing is for (or the moment of a manual run).
    scheduled_for = models.DateTimeField()
    manual = models.BooleanField(default=False)
    claimed_at = models.DateTimeField(default=timezone.now)
    outcome = models.CharField(max_length=8, choices=FiringOutcome.choices)
    reason = models.TextField(blank=True)
    run = models.ForeignKey(
        RunLog, on_delete=models.SET_NULL, null=True, blank=True, related_name="firings"
    )

    class Meta:
        ordering = ["job", "-scheduled_for", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["job", "scheduled_for"], name="uniq_cron_firing")
        ]

    def __str__(self) -> str:
        return f"{self.job_id} @ {self.scheduled_for:%Y-%m-%d %H:%M}: {self.outcome}"


class WebhookMode(models.TextChoices):
    SECRET = "secret"  # a shared secret in the X-Webhook-Secret header; only its hash is stored
    SIGNATURE = "signature"  # Standard Webhooks v1 signatures; the secret is stored encrypted


class Webhook(models.Model):
    """An inbound webhook of a project (docs/protocol.md, "Webhook"). `secret` is, in secret mode,
    the SHA-256 of the token (hex), in signature mode the `whsec_` secret encrypted with the
    webhook key (triggers/webhooks/secrets.py); the secret itself is shown once, never stored
    in clear. After a rotation the previous one stays valid until `previous_until`."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks"
    )
    name = models.CharField(max_length=100)
    mode = models.CharField(max_length=10, choices=WebhookMode.choices)
    filter = models.JSONField(default=dict, blank=True)
    action = models.JSONField(default=dict)
    secret = models.TextField(editable=False)
    previous_secret = models.TextField(blank=True, editable=False)
    previous_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="uniq_webhook_name")
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.name}"

    @property
    def public_id(self) -> str:
        return f"wh_{self.pk}"


class WebhookDelivery(models.Model):
    """The claim of one delivery id of a webhook: its unique row makes a replayed
    `webhook-id` run nothing; a replay answers the run written here."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    delivery_id = models.CharField(max_length=200)
    run = models.ForeignKey(
        RunLog, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["webhook", "delivery_id"], name="uniq_webhook_delivery")
        ]

    def __str__(self) -> str:
        return f"{self.webhook_id}/{self.delivery_id}"


class DeliveryOutcome(models.TextChoices):
    ACCEPTED = "accepted"  # verified, and its action ran (200 with the run id)
    REPLAYED = "replayed"  # a delivery id seen before: the first run's id, nothing ran
    FILTERED = "filtered"  # verified, but the filter did not match (202), nothing ran
    REFUSED = "refused"  # not verified, too large, stale, not JSON, or its action refused it


class TriggerEvent(models.Model):
    """One inbound delivery to a webhook, accepted or refused, with why
    (triggers/webhooks/inbound.py: deliveries to ids that name no webhook, and refusals past a
    webhook's limit, are only counted). `webhook_ref` keeps the id as it was asked for;
    `webhook` is null once the webhook is deleted."""

    webhook = models.ForeignKey(
        Webhook, on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    webhook_ref = models.CharField(max_length=100, blank=True)
    delivery_id = models.CharField(max_length=200, blank=True)
    status_code = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=10, choices=DeliveryOutcome.choices)
    reason = models.TextField(blank=True)
    run = models.ForeignKey(
        RunLog, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    received_at = models.DateTimeField(default=timezone.now)
    body_size = models.PositiveIntegerField(default=0)
    # The first bytes of the body (as text), for an operator reading why it was refused.
    body_excerpt = models.TextField(blank=True)

    class Meta:
        ordering = ["-received_at", "-pk"]
        indexes = [models.Index(fields=["webhook", "received_at"])]

    def __str__(self) -> str:
        return f"{self.public_id} {self.webhook_ref} {self.status_code} {self.outcome}"

    @property
    def public_id(self) -> str:
        return f"tev_{self.pk}"
