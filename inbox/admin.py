"""The inbox in the operators' admin: items by status, kind and project, their status history,
and answers and dismissals through the same services as every client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from inbox import services
from inbox.answers import SHAPES, answer_from_text
from inbox.models import InboxItem, InboxKind, InboxStatus, InboxTransition
from vancetope.errors import BadRequest, BrainError


class TransitionInline(admin.TabularInline):
    """Written only by inbox.transitions: shown, never added or changed here."""

    model = InboxTransition
    extra = 0
    can_delete = False
    fields = readonly_fields = ("at", "call", "from_status", "to_status", "by", "detail")

    def has_add_permission(self, request: HttpRequest, obj: InboxItem | None = None) -> bool:
        return False


class AnswerForm(forms.ModelForm):
    """Every field of an item belongs to the inbox services; the one thing to enter here is
    an answer, checked as the item's kind wants it."""

    answer_text = forms.CharField(
        required=False,
        label="Answer",
        help_text="APPROVAL: approve or reject, then an optional comment. QUESTION: one of "
        "its options, or any text.",
    )

    class Meta:
        model = InboxItem
        fields: list[str] = []

    def clean_answer_text(self) -> dict[str, Any] | None:
        text = self.cleaned_data["answer_text"].strip()
        if not text:
            return None
        item = self.instance
        answer = answer_from_text(item.kind, list(item.options or []), text)
        try:
            return services.check_answer(item, answer)
        except BrainError as exc:
            raise forms.ValidationError(exc.message) from exc


def decide(decision: str) -> Callable[[InboxItem, Any], object]:
    """Approve or reject an APPROVAL item (any other kind is refused, and left alone)."""

    def run(item: InboxItem, by: Any) -> object:
        if item.kind != InboxKind.APPROVAL:
            raise BadRequest(f"it is {item.kind}, not an APPROVAL")
        return services.answer_item(item, {"decision": decision}, by=by)

    return run


def item_action(
    verb: str, run: Callable[[InboxItem, Any], object]
) -> Callable[[admin.ModelAdmin, HttpRequest, QuerySet[InboxItem]], None]:  # type: ignore[type-arg]
    """An admin action that goes through the inbox service; a refusal (409, 400) becomes a
    message and the item is left as it was."""

    @admin.action(description=f"{verb.capitalize()} selected items")
    def action(
        modeladmin: admin.ModelAdmin,  # type: ignore[type-arg]
        request: HttpRequest,
        queryset: QuerySet[InboxItem],
    ) -> None:
        for item in queryset.select_related("project", "answered_by"):
            try:
                run(item, request.user)
            except BrainError as exc:
                modeladmin.message_user(
                    request, f"{item.public_id}: {exc.code} {exc.message}", messages.WARNING
                )
            else:
                modeladmin.message_user(
                    request, f"{item.public_id}: {verb} → {item.status}", messages.SUCCESS
                )

    action.__name__ = f"{verb}_items"
    return action


# Shown, never edited here: the inbox services own every field of an item.
ITEM_FIELDS = (
    "project",
    "user",
    "origin_process",
    "origin_public_id",
    "kind",
    "title",
    "body",
    "options",
    "status",
    "answer",
    "answered_by",
    "answered_at",
    "expires_at",
    "default_action",
    "origin_delivered",
    "origin_note",
    "answer_as_steer",
    "created_at",
)


@admin.register(InboxItem)
class InboxItemAdmin(admin.ModelAdmin):
    form = AnswerForm
    list_display = [
        "public_id",
        "kind",
        "status",
        "title",
        "user",
        "project",
        "origin",
        "origin_delivered",
        "created_at",
    ]
    list_filter = ["status", "kind", "project"]
    search_fields = ["title", "body", "origin_public_id"]
    list_select_related = ["project", "user"]
    readonly_fields = ITEM_FIELDS
    fieldsets = [
        (None, {"fields": ITEM_FIELDS}),
        ("Answer it", {"fields": ["answer_text"]}),
    ]
    inlines = [TransitionInline]
    actions = [
        item_action("approve", decide("approve")),
        item_action("reject", decide("reject")),
        item_action("dismiss", lambda item, by: services.dismiss(item, by=by)),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # items are posted by processes

    @admin.display(description="origin process", ordering="origin_public_id")
    def origin(self, item: InboxItem) -> SafeString | str:
        """The process that posted it, linked to its admin page while its row exists."""
        if item.origin_process_id is None:
            if not item.origin_public_id.startswith("tp_"):
                return f"{item.origin_public_id} (no process: a system client's)"
            return f"{item.origin_public_id} (gone)"
        url = reverse("admin:processes_thinkprocess_change", args=[item.origin_process_id])
        return format_html('<a href="{}">{}</a>', url, item.origin_public_id)

    def get_fieldsets(self, request: HttpRequest, obj: InboxItem | None = None) -> Any:
        if obj is None or obj.status != InboxStatus.OPEN or obj.kind not in SHAPES:
            return [(None, {"fields": ITEM_FIELDS})]
        return self.fieldsets

    def save_model(self, request: HttpRequest, obj: InboxItem, form: Any, change: bool) -> None:
        # Nothing of the row is saved from here (the services own every field): only an
        # answer, if one was entered.
        answer = form.cleaned_data.get("answer_text")
        if answer is None:
            return
        try:
            services.answer_item(obj, answer, by=request.user)
        except BrainError as exc:
            self.message_user(
                request, f"{obj.public_id}: {exc.code} {exc.message}", messages.WARNING
            )
