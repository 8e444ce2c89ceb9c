from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from vancetope.tenancy.models import (
    ApiToken,
    Project,
    ProjectGroup,
    ProjectMembership,
    Tenant,
    TenantMembership,
)
from vancetope.tenancy.services import revoke_token


class TenantMembershipInline(admin.TabularInline):
    model = TenantMembership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [TenantMembershipInline]


@admin.register(ProjectGroup)
class ProjectGroupAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "tenant"]
    list_filter = ["tenant"]
    search_fields = ["slug", "name"]


class ProjectMembershipInline(admin.TabularInline):
    model = ProjectMembership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["public_id", "name", "tenant", "group", "created_at"]
    list_filter = ["tenant"]
    search_fields = ["slug", "name"]
    inlines = [ProjectMembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "user", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    # The hash is useless to an operator and the raw token is never stored.
    exclude = ["key_hash"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]

    actions = ["revoke"]

    def has_add_permission(self, request: object) -> bool:
        return False  # tokens are issued by `manage.py bootstrap` or the CLI, which show them once

    @admin.action(description="Revoke the selected tokens (their open sockets close)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token_pk in queryset.values_list("pk", flat=True):
            revoke_token(token_pk)
        self.message_user(request, f"{len(queryset)} token(s) revoked.")
