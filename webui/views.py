"""Pages of the web UI. Each reads through the same services as the REST API, so a page shows
exactly what /api/ would show the logged-in user; the JavaScript then keeps it fresh over REST
(dashboard) or drives a WebSocket session (interactive)."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from processes import queries
from processes.presenters import process_detail
from processes.states import Status
from vancetope.errors import NotFound
from vancetope.ids import parse_public_id
from vancetope.tenancy.services import visible_projects

LIST_LIMIT = 200


@login_required
def process_list(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", "")
    rows = queries.visible_processes(request.user).order_by("-pk")
    error = ""
    if status and status not in Status.values:
        error = f"status must be one of {', '.join(Status.values)}, not {status!r}"
        rows = rows.none()
    elif status:
        rows = rows.filter(status=status)
    context = {
        "processes": rows[:LIST_LIMIT],
        "statuses": Status.values,
        "status": status,
        "error": error,
        "mode": "dashboard",
    }
    return render(request, "webui/process_list.html", context, status=400 if error else 200)


@login_required
def process_detail_page(request: HttpRequest, process_id: str) -> HttpResponse:
    try:
        pk = parse_public_id("tp", process_id, "process")
        process = queries.get_visible_process(request.user, pk)
    except NotFound as exc:
        # The same answer for "no such process" and "another tenant's": nothing leaks.
        raise Http404(exc.message) from exc
    detail = process_detail(process)
    tree = detail["taskTree"]
    context = {
        "process": detail,
        "task_tree": json.dumps(tree, indent=2, ensure_ascii=False) if tree is not None else None,
        "mode": "dashboard",
    }
    return render(request, "webui/process_detail.html", context)


@login_required
def interactive(request: HttpRequest) -> HttpResponse:
    projects = list(visible_projects(request.user).order_by("pk"))
    context = {
        "projects": [project.public_id for project in projects],
        # A dashboard page may hand over a process to steer; the socket checks it is visible.
        "focus_process": request.GET.get("process", ""),
        "mode": "interactive",
    }
    return render(request, "webui/interactive.html", context)
