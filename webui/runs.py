"""The run-log pages of the web UI: the user's runs on a timeline (newest first, each a bar
from its start to its finish, or to now while it runs) and their notifications (with the
unread count, marked read one by one or all at once); and one run's page, its own timeline
(triggers/runs/timeline.py). Read through the services /api/runs and /api/notifications use."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from triggers import notifications
from triggers.models import RunStatus, TriggerType
from triggers.presenters import notification_data, run_data
from triggers.runs import queries as run_queries
from triggers.runs.timeline import run_timeline
from vancetope.errors import BadRequest, BrainError, NotFound

RUN_LIMIT = 100
NOTIFICATION_LIMIT = 20


def timeline(rows: list[Any]) -> list[dict[str, Any]]:
    """Each run with where its bar sits on a line from the first start to the last finish
    (percentages of that span; a bar is at least 1% wide so that a short run shows)."""
    now = timezone.now()
    if not rows:
        return []
    start = min(run.started_at for run in rows)
    end = max(run.finished_at or now for run in rows)
    span = max((end - start).total_seconds(), 1.0)
    placed = []
    for run in rows:
        left = (run.started_at - start).total_seconds() / span * 100
        width = ((run.finished_at or now) - run.started_at).total_seconds() / span * 100
        seconds = ((run.finished_at or now) - run.started_at).total_seconds()
        placed.append(
            {
                **run_data(run),
                "left": f"{min(left, 99):.2f}",
                "width": f"{max(width, 1):.2f}",
                "seconds": f"{seconds:.1f}",
                "workflowName": run.workflow.name if run.workflow else "",
            }
        )
    return placed


def is_routine(run: dict[str, Any]) -> bool:
    """A chat turn that went well: one of many, folded on the runs page."""
    return run["trigger"]["type"] == TriggerType.USER and run["status"] == RunStatus.COMPLETED


def folded(placed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs as rows, each stretch of routine chat runs in one folded row (`fold`), so a
    workflow's, a cron job's, a failed or a waiting run is not lost among chat turns."""
    entries: list[dict[str, Any]] = []
    for run in placed:
        if is_routine(run) and entries and "fold" in entries[-1]:
            entries[-1]["fold"].append(run)
        elif is_routine(run):
            entries.append({"fold": [run]})
        else:
            entries.append({"run": run})
    return entries


@login_required
def runs_page(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", "")
    trigger = request.GET.get("trigger", "")
    error = ""
    try:
        rows = list(
            run_queries.filtered_runs(
                request.user, status=status or None, trigger=trigger or None
            ).select_related("workflow")[:RUN_LIMIT]
        )
    except BadRequest as exc:
        error, rows = exc.message, []
    listed = notifications.filtered_notifications(request.user)[:NOTIFICATION_LIMIT]
    context = {
        "entries": folded(timeline(rows)),
        "notifications": [notification_data(row) for row in listed],
        "unread": notifications.unread_count(request.user),
        "statuses": RunStatus.values,
        "triggers": TriggerType.values,
        "status": status,
        "trigger": trigger,
        "error": error,
        "mode": "runs",
    }
    return render(request, "webui/runs.html", context, status=400 if error else 200)


@login_required
@require_POST
def notification_read(request: HttpRequest, notification_id: str) -> HttpResponse:
    try:
        notifications.mark_read(request.user, notification_id)
    except BrainError as exc:
        messages.error(request, exc.message)
    return redirect("webui:runs")


@login_required
def run_page(request: HttpRequest, run_id: str) -> HttpResponse:
    try:
        run = run_queries.get_visible_run(request.user, run_id)
    except NotFound as exc:
        # The same answer for "no such run" and "another tenant's": nothing leaks.
        raise Http404(exc.message) from exc
    context = {
        "run": {
            **run_data(run),
            "workflowName": run.workflow.name if run.workflow else "",
        },
        "timeline": run_timeline(run),
        "mode": "runs",
    }
    return render(request, "webui/run_detail.html", context)


@login_required
@require_POST
def notifications_read_all(request: HttpRequest) -> HttpResponse:
    marked = notifications.mark_all_read(request.user)
    messages.success(request, f"Marked {marked} read.")
    return redirect("webui:runs")
