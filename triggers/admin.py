"""Workflows, run logs, notifications, webhooks and trigger events in the operators' admin.
A workflow is edited as its YAML or JSON text and checked on save as REST checks it; run logs,
notifications and trigger events are shown, never changed here (a run's status belongs to
triggers/transitions.py). A webhook's secret is never shown but once, in the message of its
creation or of the rotate action."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from triggers.cron import admin as cron_admin
from triggers.models import Notification, RunLog, RunTransition, TriggerEvent, Webhook, Workflow
from triggers.webhooks import configs as webhooks
from triggers.webhooks import secrets as webhook_secrets
from triggers.workflows import services as workflows
from vancetope.errors import BadRequest, BrainError, form_error

# Cron jobs and their firings have their own module (edited through triggers/cron/jobs.py).
__all__ = ["cron_admin"]


class WorkflowForm(forms.ModelForm):
    source = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 20, "cols": 100, "style": "font-family: monospace"}),
        help_text="The workflow as YAML or JSON: name, description?, engine? (default marvin), "
        "goal, inputs, tasks [{kind: WORKER|USER_INPUT|AGGREGATE, title, goal, recipe?}]; "
        "templates use ${input.name}.",
    )

    class Meta:
        model = Workflow
        fields = ["project", "source"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        source = cleaned.get("source")
        if source:
            try:
                body = workflows.checked_body(workflows.parse_source(source))
            except BadRequest as exc:
                raise forms.ValidationError({"source": exc.message}) from exc
            self.instance.body = body
            self.instance.name = body["name"]
        return cleaned


@admin.register(Workflow)
class WorkflowAdmin(admin.ModelAdmin):
    form = WorkflowForm
    list_display = ("public_id", "name", "project", "updated_at")
    list_filter = ("project",)
    search_fields = ("name", "source")


class RunTransitionInline(admin.TabularInline):
    """Written only by triggers.transitions."""

    model = RunTransition
    extra = 0
    can_delete = False
    fields = readonly_fields = ("at", "from_status", "to_status", "detail")

    def has_add_permission(self, request: HttpRequest, obj: RunLog | None = None) -> bool:
        return False


@admin.register(RunLog)
class RunLogAdmin(admin.ModelAdmin):
    list_display = (
        "public_id",
        "trigger_type",
        "client_type",
        "status",
        "process_public_id",
        "owner",
        "started_at",
        "finished_at",
        "tasks_executed",
        "tokens_used",
    )
    list_filter = ("status", "trigger_type", "client_type", "started_at", "project")
    date_hierarchy = "started_at"
    search_fields = ("process_public_id", "owner__username", "error", "workflow__name")
    inlines = [RunTransitionInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = ("public_id", "user", "level", "text", "run", "created_at", "read_at")
    list_filter = ("level", "project")
    search_fields = ("text", "user__username", "process_public_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class WebhookForm(forms.ModelForm):
    """Checked as REST checks a webhook; the secret is never a field."""

    class Meta:
        model = Webhook
        fields = ["project", "owner", "name", "mode", "filter", "action"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        project, owner = cleaned.get("project"), cleaned.get("owner")
        if self.instance.pk and cleaned.get("mode") != self.instance.mode:
            raise forms.ValidationError(
                {"mode": "cannot change: create a webhook of the other mode"}
            )
        try:
            cleaned["filter"] = webhooks.checked_filter(cleaned.get("filter"))
            if project is not None and owner is not None:
                cleaned["action"] = webhooks.checked_action(owner, project, cleaned.get("action"))
        except BrainError as exc:
            raise form_error(exc, {"filter": "filter"}, default="action") from exc
        return cleaned


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    form = WebhookForm
    list_display = ("public_id", "name", "project", "mode", "owner", "updated_at")
    list_filter = ("mode", "project")
    search_fields = ("name",)
    actions = ["rotate_secret"]

    def save_model(self, request: HttpRequest, obj: Webhook, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        secret = webhook_secrets.set_new_secret(obj, keep_previous=False)
        super().save_model(request, obj, form, change)
        self._show_once(request, obj, secret)

    @admin.action(description="Rotate the secret (the old one stays valid for the grace period)")
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[Webhook]) -> None:
        for webhook in queryset:
            made = webhooks.rotate_secret(webhook)
            self._show_once(request, made.webhook, made.secret)

    def _show_once(self, request: HttpRequest, webhook: Webhook, secret: str) -> None:
        self.message_user(
            request,
            f"The secret of {webhook.public_id} ({webhook.name}), shown this once: {secret}",
            messages.WARNING,
        )


@admin.register(TriggerEvent)
class TriggerEventAdmin(admin.ModelAdmin):
    """Every inbound delivery, accepted or refused, with its reason; never changed here."""

    list_display = (
        "public_id",
        "received_at",
        "webhook_ref",
        "delivery_id",
        "status_code",
        "outcome",
        "reason",
        "body_size",
        "run",
    )
    list_filter = ("outcome", "status_code", "webhook", "received_at")
    search_fields = ("webhook_ref", "delivery_id", "reason")
    date_hierarchy = "received_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
