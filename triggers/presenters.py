"""The run, notification and workflow objects of docs/protocol.md, shared by REST, the WebSocket
and the web UI (their models are in protocol/objects.py)."""

from __future__ import annotations

from typing import Any

from protocol.vocabulary import iso
from triggers.models import CronFiring, CronJob, Notification, RunLog, Workflow
from vancetope.tenancy.models import Project


def run_data(run: RunLog, project_slug: str | None = None) -> dict[str, Any]:
    """Read with its project (`run_queries.visible_runs` selects it), or given its slug."""
    trigger: dict[str, Any] = {"type": run.trigger_type}
    for key, value in (
        ("cronId", run.cron_id),
        ("webhookId", run.webhook_id),
        ("deliveryId", run.delivery_id),
        ("workflowId", f"wf_{run.workflow_id}" if run.workflow_id else ""),
    ):
        if value:
            trigger[key] = value
    return {
        "id": run.public_id,
        "sessionId": f"sess_{run.session_id}" if run.session_id else None,
        "clientType": run.client_type,
        "trigger": trigger,
        "scope": {
            "projectId": Project.public_id_of(project_slug)
            if project_slug
            else run.project.public_id,
            "processId": run.process_public_id or None,
        },
        "startedAt": iso(run.started_at),
        "finishedAt": iso(run.finished_at),
        "status": run.status,
        "tasksExecuted": run.tasks_executed,
        "tasksBlocked": run.tasks_blocked,
        "blockedReasons": list(run.blocked_reasons or []),
        "tokensUsed": run.tokens_used,
        "llmCalls": run.llm_calls,
        "notificationsSent": sent_notifications(run),
        "error": run.error or None,
    }


# What kind of message a run sent: a notification is stored for its user and sent as a
# `notification` event to every open session of theirs.
SENT_TYPE = "notification"


def sent_notifications(run: RunLog) -> list[dict[str, Any]]:
    """What the run sent, in order: each notification's type, user and message. Read only for
    a run that counted some (a person's chat turn pays no statement for it)."""
    if not run.notifications_sent or run.pk is None:
        return []
    rows = Notification.objects.filter(run_id=run.pk).order_by("pk")
    return [
        {"id": f"ntf_{pk}", "type": SENT_TYPE, "user": username, "message": text}
        for pk, username, text in rows.values_list("pk", "user__username", "text")
    ]


def notification_data(notification: Notification) -> dict[str, Any]:
    return {
        "id": notification.public_id,
        "text": notification.text,
        "level": notification.level,
        "runId": f"run_{notification.run_id}" if notification.run_id else None,
        "processId": notification.process_public_id or None,
        "projectId": notification.project.public_id,
        "read": notification.read_at is not None,
        "readAt": iso(notification.read_at),
        "createdAt": iso(notification.created_at),
    }


def workflow_data(workflow: Workflow) -> dict[str, Any]:
    body = workflow.body
    return {
        "id": workflow.public_id,
        "projectId": workflow.project.public_id,
        "name": workflow.name,
        "description": body.get("description", ""),
        "engine": body.get("engine", "marvin"),
        "goal": body.get("goal", ""),
        "inputs": list(body.get("inputs", [])),
        "tasks": list(body.get("tasks", [])),
        "source": workflow.source,
        "createdAt": iso(workflow.created_at),
        "updatedAt": iso(workflow.updated_at),
    }


def firing_data(firing: CronFiring) -> dict[str, Any]:
    return {
        "scheduledFor": iso(firing.scheduled_for),
        "manual": firing.manual,
        "claimedAt": iso(firing.claimed_at),
        "outcome": firing.outcome,
        "reason": firing.reason or None,
        "runId": f"run_{firing.run_id}" if firing.run_id else None,
    }


# Firings shown with one job (the admin lists them all).
RECENT_FIRINGS = 20


def cron_job_data(job: CronJob, *, firings: bool = False) -> dict[str, Any]:
    """Read with its project (`cron.visible_jobs` selects it)."""
    from triggers.cron.jobs import describe, next_run_at

    data: dict[str, Any] = {
        "id": job.public_id,
        "projectId": job.project.public_id,
        "name": job.name,
        "schedule": job.schedule,
        "description": describe(job),
        "timezone": job.time_zone,
        "enabled": job.enabled,
        "overlap": job.overlap,
        "action": dict(job.action),
        "nextRunAt": iso(next_run_at(job)),
        "lastRunId": f"run_{job.last_run_id}" if job.last_run_id else None,
        "createdAt": iso(job.created_at),
        "updatedAt": iso(job.updated_at),
    }
    if firings:
        recent = job.firings.order_by("-scheduled_for", "-pk")[:RECENT_FIRINGS]
        data["firings"] = [firing_data(firing) for firing in recent]
    return data
