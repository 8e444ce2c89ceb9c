"""Workflows, run logs and notifications in the operators' admin. A workflow is edited as its
YAML or JSON text and checked on save as REST checks it; run logs and notifications are shown,
never changed here (a run's status belongs to triggers/transitions.py)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from triggers import cron_admin, workflows
from triggers.models import Notification, RunLog, RunTransition, Workflow
from vancetope.errors import BadRequest

# Cron jobs and their firings have their own module (edited through triggers/cron.py).
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
