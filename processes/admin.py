from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from processes import services
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from vancetope.errors import BrainError


class PendingInline(admin.TabularInline):
    model = PendingMessage
    extra = 0
    fields = readonly_fields = (
        "seq",
        "kind",
        "payload",
        "consumed",
        "consumed_at",
        "consumed_fence",
        "created_at",
    )
    can_delete = False
    ordering = ["seq"]


class ConversationInline(admin.TabularInline):
    model = ConversationMessage
    extra = 0
    fields = readonly_fields = (
        "index",
        "role",
        "content",
        "tool_calls",
        "created_at",
    )
    can_delete = False
    ordering = ["index"]


class TransitionInline(admin.TabularInline):
    model = ProcessTransition
    extra = 0
    fields = readonly_fields = (
        "at",
        "call",
        "from_status",
        "to_status",
        "close_reason",
        "detail",
    )
    can_delete = False


class CategoryFilter(admin.SimpleListFilter):
    title = "category"
    parameter_name = "category"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:  # type: ignore[type-arg]
        return [("user", "user"), ("service", "service")]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[ThinkProcess]
    ) -> QuerySet[ThinkProcess]:
        if self.value() == "service":
            return queryset.filter(recipe_snapshot__category="service")
        if self.value() == "user":
            return queryset.exclude(recipe_snapshot__category="service")
        return queryset


def lifecycle_action(call: Callable[[int], ThinkProcess], verb: str):  # type: ignore[no-untyped-def]
    """An admin action that goes through the same service as every client; a 409 becomes a
    message, the process is left as it was."""

    @admin.action(description=f"{verb.capitalize()} selected processes")
    def run(
        modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[ThinkProcess]
    ) -> None:  # type: ignore[type-arg]
        for process in queryset:
            try:
                changed = call(process.pk)
            except BrainError as exc:
                modeladmin.message_user(
                    request, f"{process.public_id}: {exc.code} {exc.message}", messages.WARNING
                )
            else:
                modeladmin.message_user(
                    request, f"{process.public_id}: {verb} → {changed.status}", messages.SUCCESS
                )

    run.__name__ = f"{verb}_processes"
    return run


@admin.register(ThinkProcess)
class ThinkProcessAdmin(admin.ModelAdmin):
    list_display = [
        "public_id",
        "think_engine",
        "recipe_name",
        "status",
        "close_reason",
        "context_drift",
        "session",
        "goal",
        "updated_at",
    ]
    list_filter = [
        "status",
        "think_engine",
        CategoryFilter,
        "close_reason",
        "context_drift",
        "session__system",
    ]
    search_fields = ["goal", "recipe_name"]
    # The engine owns engine_state (task tree, strategy state) and the lifecycle service owns
    # status and drift (the user decides about drift with resume, stop or reset): shown, not
    # edited. The operator may correct the goal and the spawn params.
    readonly_fields = [
        "session",
        "parent",
        "think_engine",
        "engine_version",
        "recipe_name",
        "recipe_snapshot",
        "engine_state",
        "status",
        "close_reason",
        "context_drift",
        "interrupt",
        "interrupt_at",
        "next_pending_seq",
        "conversation_length",
        "lease_owner",
        "lease_expires_at",
        "lease_fence",
        "prompt_tokens",
        "completion_tokens",
        "last_error",
        "created_at",
        "updated_at",
    ]
    inlines = [PendingInline, TransitionInline, ConversationInline]
    actions = [
        lifecycle_action(services.resume_process, "resume"),
        lifecycle_action(services.pause_process, "pause"),
        lifecycle_action(services.stop_process, "stop"),
        lifecycle_action(services.reset_process, "reset"),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # processes are spawned by sessions (services.create_process), never by hand

    def save_model(
        self,
        request: HttpRequest,
        obj: ThinkProcess,
        form: forms.ModelForm[ThinkProcess],
        change: bool,
    ) -> None:
        # Write only what the operator edited: a lane may commit a turn meanwhile, and a full
        # save would write back the status, lease and counters read at the start of the request.
        if form.changed_data:
            obj.updated_at = timezone.now()
            obj.save(update_fields=[*form.changed_data, "updated_at"])
