"""Webhook configurations: the body's check and the use cases (list, create, change, delete,
rotate the secret). Deliveries are triggers/inbound.py's.

A body is PROTOCOL.md's "Webhook": `{name, mode: secret|signature, filter?: {"dotted.path":
value}, action: {type: run_workflow, workflowId, input: {name: template}} or {type:
unblock_tasks, match: {blockedByExternal: template}}}`, templates with `${event.path}`. Every
problem is a 400 naming its field; a webhook or workflow of another tenant is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from triggers import webhook_secrets
from triggers.models import Webhook, WebhookMode
from triggers.workflows import field_error, get_visible_workflow
from vancetope.ids import get_by_public_id
from vancetope.tenancy.models import Project
from vancetope.tenancy.services import in_visible_projects

FIELDS = {"name", "mode", "filter", "action"}
ACTIONS = ("run_workflow", "unblock_tasks")


@dataclass(frozen=True)
class WithSecret:
    """A webhook and its secret in clear: the one answer that shows it."""

    webhook: Webhook
    secret: str


# --- the body ------------------------------------------------------------------------------------


def _text(body: dict[str, Any], key: str, where: str, *, limit: int = 0) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise field_error(where, "is required (a non-empty string)")
    if limit and len(value) > limit:
        raise field_error(where, f"is longer than {limit} characters")
    return value


def checked_filter(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise field_error("filter", 'must be an object of {"dotted.path": value}')
    for path in value:
        if not path or any(not part for part in path.split(".")):
            raise field_error(f"filter.{path}", "is not a dotted path of the payload")
    return dict(value)


def checked_action(user: Any, project: Project, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise field_error("action", "is required (an object with a type)")
    kind = value.get("type")
    if kind not in ACTIONS:
        raise field_error("action.type", f"must be one of {', '.join(ACTIONS)}")
    if kind == "run_workflow":
        extra = set(value) - {"type", "workflowId", "input"}
        if extra:
            raise field_error(f"action.{sorted(extra)[0]}", "is not a field of run_workflow")
        workflow = get_visible_workflow(user, _text(value, "workflowId", "action.workflowId"))
        if workflow.project_id != project.pk:
            raise field_error("action.workflowId", "must be a workflow of the webhook's project")
        values = value.get("input", {})
        if not isinstance(values, dict):
            raise field_error("action.input", "must be an object of input names and templates")
        for name, template in values.items():
            if name not in workflow.body["inputs"]:
                raise field_error(f"action.input.{name}", "is not an input of the workflow")
            if not isinstance(template, str):
                raise field_error(f"action.input.{name}", "must be a template string")
        for name in workflow.body["inputs"]:
            if name not in values:
                raise field_error(f"action.input.{name}", "missing: the workflow uses it")
        return {"type": kind, "workflowId": workflow.public_id, "input": dict(values)}
    extra = set(value) - {"type", "match"}
    if extra:
        raise field_error(f"action.{sorted(extra)[0]}", "is not a field of unblock_tasks")
    match = value.get("match")
    if not isinstance(match, dict) or set(match) != {"blockedByExternal"}:
        raise field_error("action.match", "must be {blockedByExternal: template}")
    template = _text(match, "blockedByExternal", "action.match.blockedByExternal", limit=200)
    return {"type": kind, "match": {"blockedByExternal": template}}


def _unknown_fields(body: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise field_error(extra[0], "is not a field of a webhook")


# --- use cases -----------------------------------------------------------------------------------


def visible_webhooks(user: Any) -> QuerySet[Webhook]:
    """Webhooks of the projects the user sees (another tenant's are never seen)."""
    return in_visible_projects(Webhook.objects.all(), user)


def get_visible_webhook(user: Any, webhook_id: str) -> Webhook:
    return get_by_public_id(visible_webhooks(user), "wh", webhook_id, "webhook")


def filtered_webhooks(user: Any, project: str | None = None) -> QuerySet[Webhook]:
    return in_visible_projects(Webhook.objects.all(), user, project).order_by("name", "pk")


def _save(webhook: Webhook) -> None:
    webhook.updated_at = timezone.now()
    try:
        with transaction.atomic():
            webhook.save()
    except IntegrityError as exc:
        raise field_error("name", f"{webhook.name!r} is taken in this project") from exc


def create_webhook(user: Any, project: Project, body: Any) -> WithSecret:
    if not isinstance(body, dict):
        raise field_error("body", "must be an object")
    _unknown_fields(body, FIELDS)
    name = _text(body, "name", "name", limit=100)
    mode = body.get("mode")
    if mode not in WebhookMode.values:
        raise field_error("mode", f"must be one of {', '.join(WebhookMode.values)}")
    webhook = Webhook(
        project=project,
        owner=user,
        name=name,
        mode=mode,
        filter=checked_filter(body.get("filter")),
        action=checked_action(user, project, body.get("action")),
    )
    secret = webhook_secrets.set_new_secret(webhook, keep_previous=False)
    _save(webhook)
    return WithSecret(webhook, secret)


def change_webhook(user: Any, webhook_id: str, body: Any) -> Webhook:
    """PATCH: the fields given are replaced; the mode stays (a new mode is a new webhook)."""
    webhook = get_visible_webhook(user, webhook_id)
    if not isinstance(body, dict):
        raise field_error("body", "must be an object")
    _unknown_fields(body, FIELDS)
    if "mode" in body and body["mode"] != webhook.mode:
        raise field_error("mode", "cannot change: create a webhook of the other mode")
    if "name" in body:
        webhook.name = _text(body, "name", "name", limit=100)
    if "filter" in body:
        webhook.filter = checked_filter(body["filter"])
    if "action" in body:
        webhook.action = checked_action(user, webhook.project, body["action"])
    _save(webhook)
    return webhook


def delete_webhook(user: Any, webhook_id: str) -> None:
    get_visible_webhook(user, webhook_id).delete()


def rotate_secret(webhook: Webhook) -> WithSecret:
    """A new secret; the previous one stays valid for the grace period."""
    secret = webhook_secrets.set_new_secret(webhook, keep_previous=True)
    _save(webhook)
    return WithSecret(webhook, secret)


def rotate_visible_secret(user: Any, webhook_id: str) -> WithSecret:
    return rotate_secret(get_visible_webhook(user, webhook_id))
