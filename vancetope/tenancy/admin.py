from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

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


class ApiTokenAddForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "user", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    # The hash is useless to an operator and the raw token is never stored.
    exclude = ["key_hash"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    autocomplete_fields = ["user"]

    actions = ["revoke"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
        if obj is None:
            # A new token: whose and what for; its key is made on save and shown once.
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [] if obj is None else list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if not change:
            # Kept on the request for response_add only: never stored, logged or put in a
            # message (messages may live in a cookie).
            request.issued_token = obj.set_new_key()  # type: ignore[attr-defined]
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        raw = getattr(request, "issued_token", None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        context = {**self.admin_site.each_context(request), "opts": self.opts, "token": obj}
        response = TemplateResponse(
            request, "admin/tenancy/apitoken/issued.html", {**context, "raw": raw}
        )
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected tokens (their open sockets close)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token_pk in queryset.values_list("pk", flat=True):
            revoke_token(token_pk)
        self.message_user(request, f"{len(queryset)} token(s) revoked.")
