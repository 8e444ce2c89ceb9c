from __future__ import annotations

from django.contrib import admin

from processes.models import ThinkProcess
from sessions_app.models import Session, SessionEvent


class ProcessInline(admin.TabularInline):
    model = ThinkProcess
    fk_name = "session"
    extra = 0
    fields = ["think_engine", "recipe_name", "status", "close_reason", "goal", "updated_at"]
    readonly_fields = fields
    show_change_link = True
    can_delete = False


class RecentEventInline(admin.TabularInline):
    model = SessionEvent
    extra = 0
    fields = ["seq", "event", "data", "created_at"]
    readonly_fields = fields
    can_delete = False
    ordering = ["-seq"]
    max_num = 0
    verbose_name_plural = "events (newest first)"

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        return super().get_queryset(request).order_by("-seq")


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = [
        "public_id",
        "owner",
        "project",
        "client_type",
        "system",
        "status",
        "suspend_cause",
        "on_disconnect",
        "last_activity_at",
    ]
    list_filter = ["status", "system", "client_type", "is_human", "on_disconnect", "project"]
    search_fields = ["owner__username", "machine_id", "working_dir"]
    readonly_fields = ["last_seq", "created_at", "updated_at", "closed_at", "chat_process"]
    inlines = [ProcessInline, RecentEventInline]
