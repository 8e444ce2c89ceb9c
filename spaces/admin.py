"""Thinking spaces in the operators' admin: read-only, as every write goes through
spaces.transitions (a space's nodes, its accepted mutations, each node's lifecycle history)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from spaces.models import NodeTransition, SpaceChange, ThinkingNode, ThinkingSpace


class ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class NodeInline(ReadOnly, admin.TabularInline):
    model = ThinkingNode
    fk_name = "space"
    extra = 0
    fields = readonly_fields = (
        "id",
        "parent",
        "depth",
        "sort_order",
        "title",
        "state",
        "checkpoint_refreshing_at",
        "session",
        "chat_process",
    )


class ChangeInline(ReadOnly, admin.TabularInline):
    model = SpaceChange
    extra = 0
    fields = readonly_fields = ("revision", "kind", "node", "by", "at")


@admin.register(ThinkingSpace)
class ThinkingSpaceAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("__str__", "project", "owner", "revision", "version", "updated_at")
    list_filter = ("project",)
    readonly_fields = ("project", "owner", "version", "revision", "root_node", "created_at")
    inlines = [NodeInline, ChangeInline]


class TransitionInline(ReadOnly, admin.TabularInline):
    model = NodeTransition
    extra = 0
    fields = readonly_fields = ("at", "call", "from_state", "to_state", "revision", "detail")


@admin.register(ThinkingNode)
class ThinkingNodeAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("__str__", "space", "depth", "state", "updated_at")
    list_filter = ("state",)
    readonly_fields = (
        "space",
        "parent",
        "depth",
        "sort_order",
        "session",
        "chat_process",
        "title",
        "state",
        "checkpoint_refreshing_at",
        "inherited_handoff",
        "checkpoint_handoff",
        "returned_handoff",
        "notice_pending",
        "created_at",
        "updated_at",
    )
    inlines = [TransitionInline]
