"""The Session's admin page (registered from processes/admin.py): it lists the session's
processes, so it lives with the processes app, above sessions_app."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from processes.models import ThinkProcess
from sessions_app.models import Session, SessionEvent, SessionTransition


class ProcessInline(admin.TabularInline):
    model = ThinkProcess
    fk_name = "session"
    extra = 0
    fields = readonly_fields = (
        "think_engine",
        "recipe_name",
        "status",
        "close_reason",
        "goal",
        "updated_at",
    )
    show_change_link = True
    can_delete = False


class RecentEventInline(admin.TabularInline):
    model = SessionEvent
    extra = 0
    fields = readonly_fields = (
        "seq",
        "event",
        "data",
        "created_at",
    )
    can_delete = False
    ordering = ["-seq"]
    max_num = 0
    verbose_name_plural = "events (newest first)"

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        return super().get_queryset(request).order_by("-seq")


class TransitionInline(admin.TabularInline):
    """Status history, written only by sessions_app.transitions."""

    model = SessionTransition
    extra = 0
    max_num = 0
    can_delete = False
    fields = readonly_fields = ("at", "call", "from_status", "to_status", "cause")
    verbose_name_plural = "status history"


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = [
        "public_id",
        "owner",
        "display_name",
        "project",
        "client_type",
        "system",
        "status",
        "suspend_cause",
        "on_disconnect",
        "last_activity_at",
    ]
    list_filter = ["status", "system", "client_type", "is_human", "on_disconnect", "project"]
    search_fields = ["owner__username", "display_name", "machine_id", "working_dir"]
    # Owner, identity, status and activity change only through sessions_app.services and
    # sessions_app.transitions (which cascade to the processes); the operator may tune the
    # policies and the fingerprint.
    readonly_fields = [
        "owner",
        "project",
        "client_type",
        "is_human",
        "system",
        "display_name",
        "status",
        "suspend_cause",
        "last_seq",
        "binding",
        "last_activity_at",
        "created_at",
        "updated_at",
        "closed_at",
        "chat_process",
    ]
    inlines = [ProcessInline, TransitionInline, RecentEventInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Every session is opened by a client (processes/actions/sessions.py create_session).
        return False

    def save_model(
        self, request: HttpRequest, obj: Session, form: forms.ModelForm[Session], change: bool
    ) -> None:
        # Write only what the operator edited: events are numbered from last_seq while the
        # session runs, and a full save would write back the value read earlier.
        if form.changed_data:
            obj.save(update_fields=[*form.changed_data, "updated_at"])
