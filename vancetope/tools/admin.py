"""The operators' view of tools: MCP servers (editable), tool health, calls and diagnoses."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from vancetope.tools.models import McpServer, ToolCall, ToolDiagnosis, ToolHealth


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "transport", "command", "url", "tool_prefix", "enabled")
    list_filter = ("transport", "enabled")
    search_fields = ("name", "command", "url", "project__slug")
    fieldsets = (
        (None, {"fields": ("project", "name", "enabled", "tool_prefix")}),
        ("stdio", {"fields": ("command", "args", "env")}),
        ("streamable HTTP", {"fields": ("url",)}),
    )


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ToolHealth)
class ToolHealthAdmin(ReadOnlyAdmin):
    list_display = ("tool", "project", "status", "classification", "checked_at", "checked_by")
    list_filter = ("status", "classification")
    search_fields = ("tool", "evidence")


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = (
        "public_id",
        "tool",
        "location",
        "status",
        "classification",
        "process",
        "created_at",
    )
    list_filter = ("status", "location", "classification")
    search_fields = ("tool", "error")
    raw_id_fields = ("process", "session")


@admin.register(ToolDiagnosis)
class ToolDiagnosisAdmin(ReadOnlyAdmin):
    list_display = ("tool", "project", "status", "failures", "process", "created_at")
    list_filter = ("status",)
    search_fields = ("tool", "last_error")
