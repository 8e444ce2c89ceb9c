"""Pages of the web UI. Each reads through the same services as the REST API, so a page shows
exactly what /api/ would show the logged-in user; the JavaScript then keeps it fresh over REST
(dashboard) or drives a WebSocket session (interactive)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from inbox.models import InboxItem, InboxStatus
from inbox.presenters import item_data
from inbox.services import dismiss_item, do_answer, filtered_items
from processes import queries
from processes.actions import lifecycle
from processes.actions.sessions import latest_web_chat
from processes.presenters import process_data, process_detail
from processes.states import Call, Status, is_allowed
from sessions_app.models import ClientType
from triggers.presenters import workflow_data
from triggers.runs import queries as run_queries
from triggers.workflows.services import filtered_workflows
from vancetope.errors import BadRequest, BrainError, NotFound
from vancetope.ids import parse_public_id
from vancetope.memory.documents import MEDIA_TYPES
from vancetope.memory.models import EdgeType
from vancetope.tenancy.services import visible_projects
from webui import dashboard, runs
from webui.conversation import turns

LIST_LIMIT = 200
# The run logs and inbox items on a process page, newest first.
SECTION_LIMIT = 50
# The lifecycle buttons of the process page, in the order shown; each only where its status
# allows it (processes/states.py).
PAGE_CALLS = {
    Call.START: lifecycle.start_process,
    Call.PAUSE: lifecycle.pause_process,
    Call.RESUME: lifecycle.resume_process,
    Call.RESET: lifecycle.reset_process,
    Call.STOP: lifecycle.stop_process,
}


@login_required
def process_list(request: HttpRequest) -> HttpResponse:
    """The dashboard: the person's processes grouped by tree, a page of trees at a time, the
    folds in `open` filled (webui/dashboard.py)."""
    status = request.GET.get("status", "")
    category = request.GET.get("category", "")
    error = ""
    page = dashboard.TreePage([], 1, 1, 0)
    opened: set[int] = set()
    try:
        if status and status not in Status.values:
            raise BadRequest(
                f"status must be one of {', '.join(Status.values)}, not {status!r}", field="status"
            )
        number = dashboard.page_number(request.GET.get("page"))
        opened = dashboard.open_folds(request.GET.get("open"))
        page = dashboard.tree_page(
            request.user, status=status, category=category, number=number, opened=opened
        )
    except BadRequest as exc:
        error = exc.message
    filters = {key: value for key, value in (("status", status), ("category", category)) if value}

    def address(**more: Any) -> str:
        return f"?{urlencode({**filters, **more})}"

    here = {"page": page.number} if page.number > 1 else {}
    for tree in page.trees:
        folds = sorted(opened | {tree.root.pk})
        tree.open_link = address(**here, open=",".join(f"tp_{pk}" for pk in folds))
    context = {
        # The top-level process of each tree listed, the newest first.
        "processes": [tree.root for tree in page.trees],
        "trees": page.trees,
        "page": page,
        "newer": address(page=page.number - 1) if page.number > 1 else "",
        "older": address(page=page.number + 1) if page.number < page.pages else "",
        "statuses": Status.values,
        "status": status,
        "categories": queries.CATEGORIES,
        "category": category,
        "error": error,
        "mode": "dashboard",
    }
    return render(request, "webui/process_list.html", context, status=400 if error else 200)


@login_required
def process_detail_page(request: HttpRequest, process_id: str) -> HttpResponse:
    try:
        pk = parse_public_id("tp", process_id, "process")
        process = queries.get_readable_process(request.user, pk)
    except NotFound as exc:
        # The same answer for "no such process" and "another tenant's": nothing leaks.
        raise Http404(exc.message) from exc
    detail = process_detail(process)
    tree = detail["taskTree"]
    children = queries.readable_processes(request.user).filter(parent_id=process.pk).order_by("pk")
    run_rows = run_queries.filtered_runs(request.user, process=process.public_id)
    items = filtered_items(request.user, process=process.public_id)
    context = {
        "process": detail,
        "turns": turns(detail, is_chat=process.session.chat_process_id == process.pk),
        "runs": runs.timeline(list(run_rows.select_related("workflow")[:SECTION_LIMIT])),
        "items": [item_data(item) for item in items[:SECTION_LIMIT]],
        "task_tree": json.dumps(tree, indent=2, ensure_ascii=False) if tree is not None else None,
        "children": [process_data(child) for child in children[:LIST_LIMIT]],
        # A system run's process is its owner's to read, not to change: no buttons.
        "calls": [
            call.value
            for call in PAGE_CALLS
            if is_allowed(call, process.status, process.close_reason)
            and queries.is_visible(process, request.user)
        ],
        "mode": "dashboard",
    }
    return render(request, "webui/process_detail.html", context)


@require_POST
@login_required
def process_call(request: HttpRequest, process_id: str, call: str) -> HttpResponse:
    """A lifecycle button of the process page (start, pause, resume, reset, stop), through
    the same service as every client; a refusal (409) is shown on the page."""
    if call not in {c.value for c in PAGE_CALLS}:
        raise Http404(f"no process call {call!r}")
    try:
        pk = parse_public_id("tp", process_id, "process")
        process = queries.get_visible_process(request.user, pk)
        changed = PAGE_CALLS[Call(call)](process.pk)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except BrainError as exc:
        messages.error(request, f"{process_id}: {exc.message}")
    else:
        messages.success(request, f"{process_id}: {call} → {changed.status}.")
    return redirect("webui:process", process_id=process_id)


def conversation_of(user: Any, process_id: str) -> str:
    """The web session a process lives in, when the person can go back into it (theirs, a
    web chat, not CLOSED): its id, else "" (the tab's own session is used instead)."""
    try:
        process = queries.get_readable_process(user, parse_public_id("tp", process_id, "process"))
    except NotFound:
        return ""
    session = process.session
    usable = session.owner_id == user.pk and not session.system
    if usable and session.client_type == ClientType.WEB and session.status != "CLOSED":
        return session.public_id
    return ""


@login_required
def interactive(request: HttpRequest) -> HttpResponse:
    projects = list(visible_projects(request.user).order_by("pk"))
    focus = request.GET.get("process", "")
    asked_project = request.GET.get("project") or None
    error = ""
    try:
        latest = latest_web_chat(request.user, asked_project)
    except BadRequest as exc:
        error, latest, asked_project = exc.message, None, None
    context = {
        "projects": [project.public_id for project in projects],
        # The project asked for (?project=): the page opens in it and its chat is looked for
        # there, the tab's own one only if it is in it; else the default project is selected.
        "asked_project": asked_project or "",
        "selected_project": asked_project or "proj_default",
        # A dashboard page may hand over a process to steer; the socket checks it is visible.
        "focus_process": focus,
        # The chat to go back into: one the sessions page names, or the one of the process
        # handed over (its own conversation, not an empty new one).
        "resume_session": request.GET.get("session", "")
        or (conversation_of(request.user, focus) if focus else ""),
        # A plain visit's chat when the tab has none of its own: the person's latest web chat
        # that can go on, so a visit does not leave one more idle chat process behind.
        "latest_session": latest.public_id if latest is not None else "",
        # The dashboard's "New chat": a new session instead of resuming the tab's.
        "new_session": request.GET.get("new") == "1",
        "workflows": [
            workflow_data(workflow) for workflow in filtered_workflows(request.user)[:LIST_LIMIT]
        ],
        "error": error,
        "mode": "interactive",
    }
    return render(request, "webui/interactive.html", context, status=400 if error else 200)


# --- inbox ---------------------------------------------------------------------------------------


@login_required
def inbox_page(request: HttpRequest) -> HttpResponse:
    """The user's items (OPEN unless the filter says otherwise), each with its answer form."""
    status = request.GET.get("status", InboxStatus.OPEN)
    error = ""
    try:
        rows = filtered_items(request.user, status=status if status != "all" else None)
    except BadRequest as exc:
        error, rows = exc.message, InboxItem.objects.none()
    context = {
        "items": [item_data(item) for item in rows[:LIST_LIMIT]],
        "statuses": [*InboxStatus.values, "all"],
        "status": status,
        "error": error,
        "mode": "inbox",
    }
    return render(request, "webui/inbox.html", context, status=400 if error else 200)


@require_POST
@login_required
def inbox_answer(request: HttpRequest, item_id: str) -> HttpResponse:
    """The answer form of one item: an APPROVAL's decision and comment, or a QUESTION's
    choice or text. A refusal is shown on the inbox page; nothing changes."""
    form = request.POST
    if "decision" in form:
        answer: dict[str, str] = {"decision": form["decision"]}
        if form.get("comment", "").strip():
            answer["comment"] = form["comment"].strip()
    elif form.get("choice"):
        answer = {"choice": form["choice"]}
    else:
        answer = {"text": form.get("text", "").strip()}
    try:
        answered = do_answer(request.user, item_id, answer)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except BrainError as exc:
        messages.error(request, f"{item_id}: {exc.message}")
    else:
        note = "" if answered.delivered else f" (not delivered: {answered.item.origin_note})"
        messages.success(request, f"{item_id} answered{note}.")
    return redirect("webui:inbox")


@require_POST
@login_required
def inbox_dismiss(request: HttpRequest, item_id: str) -> HttpResponse:
    try:
        dismiss_item(request.user, item_id)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except BrainError as exc:
        messages.error(request, f"{item_id}: {exc.message}")
    else:
        messages.success(request, f"{item_id} dismissed.")
    return redirect("webui:inbox")


# --- memory --------------------------------------------------------------------------------------


@login_required
def memory_page(request: HttpRequest) -> HttpResponse:
    """Documents (list, upload, delete) and the knowledge graph view; the page's script reads
    and changes both over REST (/api/documents, /api/knowledge) with the login cookie."""
    context = {
        "projects": [
            project.public_id for project in visible_projects(request.user).order_by("pk")
        ],
        "media_types": [media_type for media_type in MEDIA_TYPES if media_type.startswith("text/")],
        "edge_types": EdgeType.values,
        "mode": "memory",
    }
    return render(request, "webui/memory.html", context)
