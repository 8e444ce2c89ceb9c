"""Workflows: the body's schema and check, `${input.x}` templates, and the use cases (list,
create, replace, delete; a run is in triggers/runs/system.py).

A body is docs/protocol.md's "Workflow": `{name, description?, engine? (default marvin), goal,
inputs: [names], tasks: [{kind: WORKER|USER_INPUT|AGGREGATE, title, goal, recipe?}]}`, given
as a JSON object or as YAML/JSON text. Every problem is a 400 naming its field.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import yaml
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from triggers.models import Workflow
from vancetope.errors import BadRequest, Conflict
from vancetope.ids import get_by_public_id
from vancetope.jsonbody import check_json
from vancetope.tenancy.models import Project
from vancetope.tenancy.services import in_visible_projects, require_project_admin

NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
WORKFLOW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "description": {"type": "string"},
        "engine": {"type": "string", "minLength": 1},
        "goal": {"type": "string", "minLength": 1},
        "inputs": {"type": "array", "items": {"type": "string", "pattern": NAME}},
        "tasks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"enum": ["WORKER", "USER_INPUT", "AGGREGATE"]},
                    "title": {"type": "string", "minLength": 1},
                    "goal": {"type": "string"},
                    "recipe": {"type": "string", "minLength": 1},
                },
                "required": ["kind", "title", "goal"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["name", "goal", "tasks"],
    "additionalProperties": False,
}
DEFAULT_ENGINE = "marvin"
# `${input.name}`; anything else that looks like a template is left as it is.
INPUT_REFERENCE = re.compile(r"\$\{input\.([A-Za-z_][A-Za-z0-9_]*)\}")
# `${event.dotted.path}` in a webhook's templates: keys of the payload's objects (or indexes of
# its lists) joined by dots.
EVENT_REFERENCE = re.compile(r"\$\{event\.([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\}")
MISSING = object()


# --- templates -----------------------------------------------------------------------------------


def references(template: str) -> list[str]:
    """The input names a template uses, in order."""
    return INPUT_REFERENCE.findall(template)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def substitute(template: str, values: dict[str, Any]) -> str:
    """Every `${input.x}` replaced by the value of `x` (text as it is, anything else as JSON);
    a name without a value is a 400 naming `input.x`. No evaluation: a plain replacement."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise BadRequest.naming(f"input.{name}", "missing: the workflow uses it")
        return _as_text(values[name])

    return INPUT_REFERENCE.sub(value_of, template)


def event_value(event: Any, path: str) -> Any:
    """The value at a dotted path of a payload (`issue.key`, `items.0.url`), or MISSING."""
    value = event
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def substitute_event(template: str, event: Any) -> str:
    """Every `${event.path}` replaced by the payload's value there, as `substitute` does; a
    path the payload lacks is a 400 naming `${event.path}`."""

    def value_of(match: re.Match[str]) -> str:
        value = event_value(event, match.group(1))
        if value is MISSING:
            raise BadRequest.naming(match.group(0), "is not in the event payload")
        return _as_text(value)

    return EVENT_REFERENCE.sub(value_of, template)


# --- the body ------------------------------------------------------------------------------------


def parse_source(text: str) -> Any:
    """YAML (JSON is YAML too) text as a value; text that does not parse, or holds text no
    database stores, is a 400."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadRequest.naming("body", f"is neither YAML nor JSON: {exc}") from exc
    # YAML escapes make what JSON escapes do ("\0", "\ud800"): checked as a JSON body is.
    check_json(value)
    return value


def _where(path: list[Any]) -> str:
    """A JSON path as the error names it: `tasks[1].kind`."""
    where = ""
    for part in path:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return where


def checked_body(body: Any) -> dict[str, Any]:
    """The body with its defaults, or a 400 naming the first field that does not fit."""
    if not isinstance(body, dict):
        raise BadRequest.naming("body", "must be an object")
    problems = sorted(
        jsonschema.Draft202012Validator(WORKFLOW_SCHEMA).iter_errors(body),
        key=lambda problem: [str(part) for part in problem.absolute_path],
    )
    if problems:
        problem = problems[0]
        path = list(problem.absolute_path)
        if problem.validator == "required":
            missing = re.findall(r"'([^']+)' is a required property", problem.message)
            raise BadRequest.naming(_where([*path, *missing[:1]]), "is required")
        if problem.validator == "additionalProperties":
            extra = re.findall(r"'([^']+)'", problem.message)
            raise BadRequest.naming(_where([*path, *extra[:1]]), "is not a field of a workflow")
        raise BadRequest.naming(_where(path) or "body", problem.message)
    inputs = list(body.get("inputs", []))
    if len(set(inputs)) != len(inputs):
        raise BadRequest.naming("inputs", "names must be distinct")
    checked = {
        "name": body["name"],
        "description": body.get("description", ""),
        "engine": body.get("engine", DEFAULT_ENGINE),
        "goal": body["goal"],
        "inputs": inputs,
        "tasks": [dict(task) for task in body["tasks"]],
    }
    templates = [("goal", checked["goal"])] + [
        (f"tasks[{index}].{key}", task[key])
        for index, task in enumerate(checked["tasks"])
        for key in ("title", "goal")
    ]
    for where, template in templates:
        for name in references(template):
            if name not in inputs:
                raise BadRequest.naming(where, f"uses ${{input.{name}}}, which is not in inputs")
    return checked


def instantiate(body: dict[str, Any], values: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The goal and the task list of a run, every template filled; an input the workflow
    does not declare is a 400 naming it, and so is a missing one."""
    if not isinstance(values, dict):
        raise BadRequest.naming("input", "must be an object of input names and values")
    for name in values:
        if name not in body["inputs"]:
            raise BadRequest.naming(f"input.{name}", "is not an input of this workflow")
    for name in body["inputs"]:
        if name not in values:
            raise BadRequest.naming(f"input.{name}", "missing: the workflow uses it")
    tasks = []
    for task in body["tasks"]:
        filled = {
            "kind": task["kind"],
            "title": substitute(task["title"], values),
            "goal": substitute(task["goal"], values),
        }
        if task.get("recipe"):
            filled["recipe"] = task["recipe"]
        tasks.append(filled)
    return substitute(body["goal"], values), tasks


# --- use cases -----------------------------------------------------------------------------------


def visible_workflows(user: Any) -> QuerySet[Workflow]:
    """Workflows of the projects the user sees (another tenant's are never seen)."""
    return in_visible_projects(Workflow.objects.all(), user)


def get_visible_workflow(user: Any, workflow_id: str) -> Workflow:
    return get_by_public_id(visible_workflows(user), "wf", workflow_id, "workflow")


def filtered_workflows(user: Any, project: str | None = None) -> QuerySet[Workflow]:
    return in_visible_projects(Workflow.objects.all(), user, project).order_by("name", "pk")


def _stored(workflow: Workflow, body: Any, source: str) -> Workflow:
    checked = checked_body(body)
    workflow.name = checked["name"]
    workflow.body = checked
    workflow.source = source or json.dumps(checked, indent=2)
    workflow.updated_at = timezone.now()
    try:
        with transaction.atomic():
            workflow.save()
    except IntegrityError as exc:
        # Another of that name exists: a conflict with what is stored (as a recipe's), not
        # a malformed body; the message still names the field.
        raise Conflict(f"name: {checked['name']!r} is taken in this project", field="name") from exc
    return workflow


def create_workflow(user: Any, project: Project, body: Any, source: str = "") -> Workflow:
    require_project_admin(user, project, "create workflows")
    return _stored(Workflow(project=project, created_by=user), body, source)


def writable_workflow(user: Any, workflow_id: str, what: str) -> Workflow:
    """A workflow the user sees (404 otherwise) and may write: members of its project read
    and run it, only its admins replace or delete it (403)."""
    workflow = get_visible_workflow(user, workflow_id)
    require_project_admin(user, workflow.project, what)
    return workflow


def replace_workflow(user: Any, workflow_id: str, body: Any, source: str = "") -> Workflow:
    return _stored(writable_workflow(user, workflow_id, "replace workflows"), body, source)


def delete_workflow(user: Any, workflow_id: str) -> None:
    writable_workflow(user, workflow_id, "delete workflows").delete()
