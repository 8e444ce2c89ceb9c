from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from engines.tasktree import TaskTree
from processes import session_admin  # noqa: F401  (registers the Session page)
from processes.actions import lifecycle
from processes.admin_tree import task_tree_html, tree_heading
from processes.models import (
    Compaction,
    ConversationMessage,
    PendingMessage,
    ProcessTransition,
    ThinkProcess,
)
from processes.states import Call, is_allowed
from sessions_app.models import SessionEvent
from vancetope.errors import BrainError

# The lifecycle calls of the process page's buttons, in the order shown.
PAGE_CALLS = {
    Call.START: lifecycle.start_process,
    Call.PAUSE: lifecycle.pause_process,
    Call.RESUME: lifecycle.resume_process,
    Call.RESET: lifecycle.reset_process,
    Call.STOP: lifecycle.stop_process,
}
# How many of the session's newest events the process page shows.
RECENT_EVENTS = 20


class ReadOnlyInline(admin.TabularInline):
    """Rows written only by the lifecycle service and the lanes: shown, never added here."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: ThinkProcess | None = None) -> bool:
        return False


class PendingInline(ReadOnlyInline):
    model = PendingMessage
    classes = ["collapse"]  # the lane's queue: internals, folded
    fields = readonly_fields = (
        "seq",
        "kind",
        "payload",
        "consumed",
        "consumed_at",
        "consumed_fence",
        "undone_at",
        "undone_by",
        "created_at",
    )
    ordering = ["seq"]


# How the admin shows a message an undo took back: greyed and struck through.
UNDONE_STYLE = "color:#8a94a3;text-decoration:line-through"


class ConversationInline(ReadOnlyInline):
    model = ConversationMessage
    fields = readonly_fields = (
        "index",
        "role",
        "message",
        "tool_calls",
        "created_at",
        "undone",
    )
    ordering = ["index"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConversationMessage]:
        return super().get_queryset(request).select_related("undone_by")

    @admin.display(description="content")
    def message(self, row: ConversationMessage) -> SafeString:
        if row.undone_at is None:
            return format_html("{}", row.content)
        return format_html('<span class="undone" style="{}">{}</span>', UNDONE_STYLE, row.content)

    @admin.display(description="undone")
    def undone(self, row: ConversationMessage) -> str:
        """Who took the message back with an undo, and when (empty if it stands)."""
        if row.undone_at is None:
            return ""
        who = row.undone_by.get_username() if row.undone_by is not None else "the admin"
        return f"by {who} at {row.undone_at:%Y-%m-%d %H:%M:%S}"


class CompactionInline(ReadOnlyInline):
    """The folds of the conversation into summaries (processes/lane/compaction.py), oldest
    first; an undone one keeps its row with `undone_at`."""

    model = Compaction
    classes = ["collapse"]
    fields = readonly_fields = (
        "first_index",
        "last_index",
        "messages",
        "turns",
        "method",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "summary_tokens",
        "summary",
        "created_at",
        "undone_at",
    )


class TransitionInline(ReadOnlyInline):
    model = ProcessTransition
    fields = readonly_fields = (
        "at",
        "call",
        "from_status",
        "to_status",
        "close_reason",
        "detail",
    )


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
    # Read-only: the goal, the params and the epoch are the process's own record, the engine
    # owns its state and the lifecycle service its status. What an operator may do is a
    # lifecycle call: the buttons on the page and the actions of the list.
    change_form_template = "admin/processes/thinkprocess/change_form.html"
    readonly_fields = [
        "task_tree",
        "sub_processes",
        "recent_session_events",
    ]
    # What an operator reads first: what the process is, where it stands and why; then its
    # work. The lane's bookkeeping (lease, fence, counters) and the engine's raw state are
    # folded below (`collapse`), one click away.
    fieldsets = [
        (
            None,
            {
                "fields": [
                    ("status", "close_reason", "context_drift"),
                    "goal",
                    ("think_engine", "recipe_name"),
                    ("session", "parent"),
                    "last_error",
                    ("created_at", "updated_at"),
                ]
            },
        ),
        ("Work", {"fields": ["task_tree", "sub_processes"]}),
        (
            "Usage",
            {
                "classes": ["collapse"],
                "fields": [
                    ("prompt_tokens", "completion_tokens", "usage_estimated"),
                    ("llm_calls", "run_quota"),
                ],
            },
        ),
        (
            "Engine state",
            {
                "classes": ["collapse"],
                "fields": ["engine_version", "engine_params", "engine_state", "recipe_snapshot"],
            },
        ),
        (
            "Internals (the lane's bookkeeping)",
            {
                "classes": ["collapse"],
                "fields": [
                    ("lease_owner", "lease_expires_at", "lease_fence"),
                    ("next_pending_seq", "consumed_count"),
                    ("conversation_length", "conversation_epoch"),
                    ("interrupt", "interrupt_at"),
                    ("root", "depth", "descendants"),
                    ("autostart", "uncommitted_spawn", "blocked_by_external"),
                    ("run_owner", "trace_parent"),
                ],
            },
        ),
        ("Recent session events", {"classes": ["collapse"], "fields": ["recent_session_events"]}),
    ]
    inlines = [PendingInline, TransitionInline, CompactionInline, ConversationInline]
    actions = [
        lifecycle_action(lifecycle.resume_process, "resume"),
        lifecycle_action(lifecycle.pause_process, "pause"),
        lifecycle_action(lifecycle.stop_process, "stop"),
        lifecycle_action(lifecycle.reset_process, "reset"),
    ]

    @admin.display(description="task tree")
    def task_tree(self, process: ThinkProcess) -> SafeString | str:
        stored = (process.engine_state or {}).get("taskTree")
        if stored is None:
            return "— (the engine keeps no task tree, or has not planned yet)"
        pretty = json.dumps(stored, indent=2, ensure_ascii=False, sort_keys=False)
        raw = format_html(
            '<details><summary>raw JSON</summary><pre class="task-tree" '
            'style="white-space: pre-wrap">{}</pre></details>',
            pretty,
        )
        tree = TaskTree.of(process.engine_state)
        if tree is None:  # not the protocol's tree: only its JSON
            return raw
        return format_html(
            '<p class="task-tree-heading">{}</p>{}{}', tree_heading(tree), task_tree_html(tree), raw
        )

    @admin.display(description="sub-processes")
    def sub_processes(self, process: ThinkProcess) -> SafeString | str:
        children = process.children.order_by("pk")
        links = format_html_join(
            ", ",
            '<a href="{}">{}</a> {}',
            (
                (
                    reverse("admin:processes_thinkprocess_change", args=[child.pk]),
                    child.public_id,
                    child.status,
                )
                for child in children
            ),
        )
        return links or "—"

    @admin.display(description=f"recent session events (newest {RECENT_EVENTS})")
    def recent_session_events(self, process: ThinkProcess) -> SafeString | str:
        events = SessionEvent.objects.filter(session_id=process.session_id).order_by("-seq")[
            :RECENT_EVENTS
        ]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            (
                (
                    event.seq,
                    event.created_at.isoformat(timespec="seconds"),
                    event.event,
                    json.dumps(event.data, ensure_ascii=False),
                )
                for event in events
            ),
        )
        if not rows:
            return "— (no events yet)"
        return format_html(
            '<table class="session-events"><thead><tr><th>seq</th><th>at</th><th>event</th>'
            "<th>data</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # processes are spawned by sessions (processes.actions.create), never by hand

    def has_change_permission(self, request: HttpRequest, obj: ThinkProcess | None = None) -> bool:
        return False  # every field is read-only; lifecycle calls are the buttons and actions

    def has_delete_permission(self, request: HttpRequest, obj: ThinkProcess | None = None) -> bool:
        return False  # a process is stopped, not deleted: its lane and its children need it

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> HttpResponse:  # type: ignore[override]
        process = context.get("original")
        context["lifecycle_calls"] = [
            call.value
            for call in PAGE_CALLS
            if process is not None and is_allowed(call, process.status, process.close_reason)
        ]
        return super().render_change_form(request, context, *args, **kwargs)

    def get_urls(self) -> list[URLPattern]:
        call = path(
            "<int:object_id>/call/<str:call>/",
            self.admin_site.admin_view(require_POST(self.call_view)),
            name="processes_thinkprocess_call",
        )
        return [call, *super().get_urls()]

    def call_view(self, request: HttpRequest, object_id: int, call: str) -> HttpResponse:
        """A button of the process page: the lifecycle service, as every client calls it; a
        refusal (409) is a message and leaves the process as it was."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if call not in {c.value for c in PAGE_CALLS}:
            raise Http404(f"no process call {call!r}")
        process = ThinkProcess.objects.filter(pk=object_id).first()
        if process is None:
            raise Http404(f"process tp_{object_id} not found")
        try:
            changed = PAGE_CALLS[Call(call)](process.pk)
        except BrainError as exc:
            self.message_user(
                request, f"{process.public_id}: {exc.code} {exc.message}", messages.WARNING
            )
        else:
            self.message_user(
                request, f"{process.public_id}: {call} → {changed.status}", messages.SUCCESS
            )
        return HttpResponseRedirect(
            reverse("admin:processes_thinkprocess_change", args=[object_id])
        )
