"""Cron jobs in the operators' admin: added and edited through triggers/cron/jobs.py as REST does
(the same checks, and the same `save_job` that keeps the PeriodicTask in step, so beat sees the
edit), deleted through `remove_job`; their firings are shown, never changed here."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django_celery_beat.admin import PeriodicTaskAdmin as BeatPeriodicTaskAdmin
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from triggers.cron import jobs as cron
from triggers.models import CronFiring, CronJob
from vancetope.errors import BadRequest, form_error


class CronJobForm(forms.ModelForm):
    action = forms.JSONField(
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80, "style": "font-family: monospace"}),
        help_text='PROTOCOL\'s action, e.g. {"type": "process_continue", "processId": "tp_12", '
        '"constraints": {"maxTasks": 3}}; or run_workflow {workflowId, input}; or '
        "brain_linker {strategies, constraints {maxLlmCalls}}.",
    )

    class Meta:
        model = CronJob
        fields = ["owner", "name", "schedule", "time_zone", "enabled", "overlap", "action"]
        help_texts = {
            "owner": "whom the runs are for, and who is notified",
            "schedule": "five cron fields: minute hour day-of-month month day-of-week",
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        owner = cleaned.get("owner")
        if owner is None or self.errors:
            return cleaned
        body = {
            key: cleaned[name]
            for key, name in (
                ("name", "name"),
                ("schedule", "schedule"),
                ("timezone", "time_zone"),
                ("enabled", "enabled"),
                ("overlap", "overlap"),
                ("action", "action"),
            )
            if name in cleaned
        }
        try:
            cron.apply_body(owner, body, self.instance)
        except BadRequest as exc:
            named = {name: name for name in self.fields} | {"timezone": "time_zone"}
            raise form_error(exc, named) from exc
        # The form writes its cleaned values on the instance: the checked, normalized ones.
        cleaned.update(
            schedule=self.instance.schedule,
            time_zone=self.instance.time_zone,
            action=self.instance.action,
        )
        return cleaned


class CronFiringInline(admin.TabularInline):
    """Written only by triggers.cron.fire: why each firing ran, was skipped or failed."""

    model = CronFiring
    extra = 0
    can_delete = False
    fields = readonly_fields = ("scheduled_for", "manual", "outcome", "reason", "run", "claimed_at")
    ordering = ("-scheduled_for",)

    def has_add_permission(self, request: HttpRequest, obj: CronJob | None = None) -> bool:
        return False


@admin.register(CronJob)
class CronJobAdmin(admin.ModelAdmin):
    form = CronJobForm
    list_display = (
        "public_id",
        "name",
        "schedule",
        "time_zone",
        "enabled",
        "owner",
        "project",
        "next_run",
        "last_run",
    )
    list_filter = ("enabled", "project")
    search_fields = ("name", "schedule", "owner__username")
    readonly_fields = ("project", "description", "next_run", "periodic_task", "last_run")
    inlines = [CronFiringInline]

    @admin.display(description="schedule in words")
    def description(self, job: CronJob) -> str:
        return cron.describe(job) if job.pk else ""

    @admin.display(description="next run")
    def next_run(self, job: CronJob) -> Any:
        return cron.next_run_at(job) if job.pk else None

    def save_model(self, request: HttpRequest, obj: CronJob, form: Any, change: bool) -> None:
        cron.save_job(obj)

    def delete_model(self, request: HttpRequest, obj: CronJob) -> None:
        cron.remove_job(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> None:
        # One at a time: a bulk delete would leave their PeriodicTasks (and beat) behind.
        for job in queryset:
            cron.remove_job(job)


# django-celery-beat's own models: its schedules are hidden (a Cron job makes and keeps the one
# it needs), its entries (the sweeps, and one per Cron job) are shown read-only, under the app
# label of triggers/cron/beat_app.py, so an edit never puts a Cron job and its entry out of step.
for schedule in (ClockedSchedule, CrontabSchedule, IntervalSchedule, SolarSchedule):
    if admin.site.is_registered(schedule):
        admin.site.unregister(schedule)
if admin.site.is_registered(PeriodicTask):
    admin.site.unregister(PeriodicTask)


@admin.register(PeriodicTask)
class SchedulerEntryAdmin(BeatPeriodicTaskAdmin):  # type: ignore[misc]
    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
