"""Webhook configurations: the body's check and the use cases (list, create, change, delete,
rotate the secret). Deliveries are triggers/webhooks/inbound.py's.

A body is docs/protocol.md's "Webhook": `{name, mode: secret|signature, filter?: {"dotted.path":
value}, action: {type: run_workflow, workflowId, input: {name: template}} or {type:
unblock_tasks, match: {blockedByExternal: template}}}`, templates with `${event.path}`. Every
problem is a 400 naming its field; a webhook or workflow of another tenant is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from triggers.models import Webhook, WebhookMode
from triggers.webhooks import secrets as webhook_secrets
from triggers.workflows.services import get_visible_workflow
from vancetope.errors import BadRequest, Conflict
from vancetope.ids import get_by_public_id
from vancetope.tenancy.models import Project
from vancetope.tenancy.services import in_visible_projects, require_project_admin

FIELDS = {"name", "mode", "filter", "action"}
# A filter's key, as the OpenAPI document states it: a dotted path, no part empty.
DOTTED_PATH = "^[^.\\u0000]+(\\.[^.\\u0000]+)*$"


@dataclass(frozen=True)
class WithSecret:
    """A webhook and its secret in clear: the one answer that shows it."""

    webhook: Webhook
    secret: str


# --- the body ------------------------------------------------------------------------------------


def _text(body: dict[str, Any], key: str, where: str, *, limit: int = 0) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadRequest.naming(where, "is required (a non-empty string)")
    if limit and len(value) > limit:
        raise BadRequest.naming(where, f"is longer than {limit} characters")
    return value


def checked_filter(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest.naming("filter", 'must be an object of {"dotted.path": value}')
    for path in value:
        if not path or any(not part for part in path.split(".")):
            raise BadRequest.naming(f"filter.{path}", "is not a dotted path of the payload")
    return dict(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is required (a non-empty string)")
    return value


class RunWorkflow(_Strict):
    """Run a workflow of the webhook's project, its input templates of `${event.path}`."""

    type: Literal["run_workflow"]
    workflowId: Annotated[str, AfterValidator(_not_blank)]
    input: dict[str, str] = {}


class UnblockMatch(_Strict):
    blockedByExternal: Annotated[str, Field(max_length=200), AfterValidator(_not_blank)]


class UnblockTasks(_Strict):
    """Unblock the tasks that wait for the external key the template renders."""

    type: Literal["unblock_tasks"]
    match: UnblockMatch


ACTIONS: dict[str, type[RunWorkflow | UnblockTasks]] = {
    "run_workflow": RunWorkflow,
    "unblock_tasks": UnblockTasks,
}


def checked_action(user: Any, project: Project, value: Any) -> dict[str, Any]:
    """The action as stored; a 400 naming the path of its first problem (by its model, then
    against the workflow it names)."""
    if not isinstance(value, dict):
        raise BadRequest.naming("action", "is required (an object with a type)")
    model = ACTIONS.get(str(value.get("type")))
    if model is None:
        raise BadRequest.naming("action.type", f"must be one of {', '.join(ACTIONS)}")
    try:
        action = model.model_validate(value)
    except ValidationError as exc:
        raise BadRequest.from_validation(exc, under="action") from exc
    if isinstance(action, UnblockTasks):
        return action.model_dump()
    workflow = get_visible_workflow(user, action.workflowId)
    if workflow.project_id != project.pk:
        raise BadRequest.naming("action.workflowId", "must be a workflow of the webhook's project")
    inputs = workflow.body["inputs"]
    for name in action.input:
        if name not in inputs:
            raise BadRequest.naming(f"action.input.{name}", "is not an input of the workflow")
    for name in inputs:
        if name not in action.input:
            raise BadRequest.naming(f"action.input.{name}", "missing: the workflow uses it")
    return {**action.model_dump(), "workflowId": workflow.public_id}


def _unknown_fields(body: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise BadRequest.naming(extra[0], "is not a field of a webhook")


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
        # Another of that name exists: a conflict with what is stored (as a recipe's), not
        # a malformed body; the message still names the field.
        raise Conflict(f"name: {webhook.name!r} is taken in this project", field="name") from exc


def create_webhook(user: Any, project: Project, body: Any) -> WithSecret:
    require_project_admin(user, project, "create webhooks")
    if not isinstance(body, dict):
        raise BadRequest.naming("body", "must be an object")
    _unknown_fields(body, FIELDS)
    name = _text(body, "name", "name", limit=100)
    mode = body.get("mode")
    if mode not in WebhookMode.values:
        raise BadRequest.naming("mode", f"must be one of {', '.join(WebhookMode.values)}")
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
    webhook = writable_webhook(user, webhook_id, "change webhooks")
    if not isinstance(body, dict):
        raise BadRequest.naming("body", "must be an object")
    _unknown_fields(body, FIELDS)
    if "mode" in body and body["mode"] != webhook.mode:
        raise BadRequest.naming("mode", "cannot change: create a webhook of the other mode")
    if "name" in body:
        webhook.name = _text(body, "name", "name", limit=100)
    if "filter" in body:
        webhook.filter = checked_filter(body["filter"])
    if "action" in body:
        webhook.action = checked_action(user, webhook.project, body["action"])
    _save(webhook)
    return webhook


def writable_webhook(user: Any, webhook_id: str, what: str) -> Webhook:
    """A webhook the user sees (404 otherwise) and may write: members of its project read
    it, only its admins change it (403)."""
    webhook = get_visible_webhook(user, webhook_id)
    require_project_admin(user, webhook.project, what)
    return webhook


def delete_webhook(user: Any, webhook_id: str) -> None:
    writable_webhook(user, webhook_id, "delete webhooks").delete()


def rotate_secret(webhook: Webhook) -> WithSecret:
    """A new secret; the previous one stays valid for the grace period."""
    secret = webhook_secrets.set_new_secret(webhook, keep_previous=True)
    _save(webhook)
    return WithSecret(webhook, secret)


def rotate_visible_secret(user: Any, webhook_id: str) -> WithSecret:
    return rotate_secret(writable_webhook(user, webhook_id, "rotate webhook secrets"))
