"""REST: /api/workflows (CRUD and run), /api/runs (run logs), /api/notifications.

A workflow body is a JSON object (with an optional `projectId` beside the workflow's fields),
or YAML/JSON text sent as `application/yaml` or `text/yaml` (its project then from
`?project=`). Either way it is checked by triggers/workflows/services.py: 400 naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import RootModel, WithJsonSchema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response

from processes.presenters import process_data
from protocol.outbound import (
    NotificationObject,
    RunObject,
    WorkflowObject,
    WorkflowStartedData,
)
from sessions_app.models import ClientType
from triggers import notifications
from triggers.models import RunStatus, TriggerType
from triggers.presenters import notification_data, run_data, workflow_data
from triggers.runs import queries as run_queries
from triggers.runs import system as runs
from triggers.workflows import services as workflows
from vancetope.api import PAGE_PARAMETERS, InputSerializer, Page, errors, paginated
from vancetope.errors import BadRequest
from vancetope.ids import public_id_pattern
from vancetope.jsonbody import BodyParser
from vancetope.tenancy.models import Project
from vancetope.tenancy.services import get_visible_project, visible_projects


class YamlParser(BaseParser):
    """The body as text; triggers/workflows/services.py parses it (YAML, of which JSON is a
    part)."""

    media_type = "application/yaml"

    # The text itself is the data: the view tells it from a JSON object by its type.
    def parse(  # type: ignore[override]
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> str:
        return stream.read().decode("utf-8", "replace") if stream is not None else ""


class TextYamlParser(YamlParser):
    media_type = "text/yaml"


class WorkflowPage(Page[WorkflowObject]):
    """A page of workflows, by name."""


class RunPage(Page[RunObject]):
    """A page of run logs, newest first."""


class NotificationPage(Page[NotificationObject]):
    """A page of notifications, newest first."""


class ReadAllData(serializers.Serializer):
    marked = serializers.IntegerField(help_text="how many were unread and are read now")
    unread = serializers.IntegerField(help_text="how many are unread now (0)")


# A workflow's body as triggers/workflows.py checks it (WORKFLOW_SCHEMA; its inputs distinct).
# Not stated: a template may use ${input.x} only for an x among the inputs.
_SOURCE = {
    **workflows.WORKFLOW_SCHEMA,
    "properties": {
        **workflows.WORKFLOW_SCHEMA["properties"],
        "inputs": {**workflows.WORKFLOW_SCHEMA["properties"]["inputs"], "uniqueItems": True},
    },
}


class WorkflowSource(RootModel[dict[str, Any]]):
    """A workflow body (docs/protocol.md "Workflow"), as YAML; its project is the `project`
    query parameter."""

    root: Annotated[dict[str, Any], WithJsonSchema(_SOURCE)]


class WorkflowInput(RootModel[dict[str, Any]]):
    """A workflow body (docs/protocol.md "Workflow"); as JSON it may name its project."""

    root: Annotated[
        dict[str, Any],
        WithJsonSchema(
            {
                **_SOURCE,
                "properties": {
                    "projectId": {"type": "string", "description": "proj_…"},
                    **_SOURCE["properties"],
                },
            }
        ),
    ]


WORKFLOW_BODIES = {
    "application/json": WorkflowInput,
    "application/yaml": WorkflowSource,
    "text/yaml": WorkflowSource,
}


class RunInput(InputSerializer):
    input = serializers.DictField(required=False, help_text="a value for each of its inputs")


def _body_and_project(request: Request) -> tuple[Any, str, Project | None]:
    """(the workflow body, its source text, the project named, if one is)."""
    data = request.data
    if isinstance(data, str):
        project = request.query_params.get("project")
        return workflows.parse_source(data), data, _project(request, project)
    if not isinstance(data, dict):
        raise BadRequest.naming("body", "must be an object")
    body = dict(data)
    if "projectId" not in body:
        return body, "", None
    return body, "", _project(request, body.pop("projectId"), named=True)


def _project(request: Request, project: Any, *, named: bool = False) -> Project | None:
    """The project a workflow body or `?project=` names (None: not named). A `projectId` the
    body names is a project id, never null."""
    if project is None and not named:
        return None
    if not isinstance(project, str):
        raise BadRequest.naming("projectId", "must be a project id like proj_x")
    return get_visible_project(request.user, project)


class WorkflowViewSet(viewsets.ViewSet):
    lookup_field = "workflow_id"
    lookup_value_regex = r"[^/]+"
    parser_classes = [BodyParser, YamlParser, TextYamlParser]

    @extend_schema(
        operation_id="workflows_list",
        parameters=[OpenApiParameter("project", str, description="proj_…"), *PAGE_PARAMETERS],
        responses={200: WorkflowPage, **errors(400, 401, 404)},
    )
    def list(self, request: Request) -> Response:
        rows = workflows.filtered_workflows(request.user, request.query_params.get("project"))
        return paginated(request, self, rows, workflow_data)

    @extend_schema(
        request=WORKFLOW_BODIES, responses={201: WorkflowObject, **errors(400, 401, 403, 404, 409)}
    )
    def create(self, request: Request) -> Response:
        body, source, project = _body_and_project(request)
        if project is None:
            seen = list(visible_projects(request.user)[:2])
            if len(seen) != 1:
                raise BadRequest.naming("projectId", "is required (you see several projects)")
            project = seen[0]
        workflow = workflows.create_workflow(request.user, project, body, source)
        return Response(workflow_data(workflow), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: WorkflowObject, **errors(401, 404)})
    def retrieve(self, request: Request, workflow_id: str) -> Response:
        return Response(workflow_data(workflows.get_visible_workflow(request.user, workflow_id)))

    @extend_schema(
        request=WORKFLOW_BODIES, responses={200: WorkflowObject, **errors(400, 401, 403, 404, 409)}
    )
    def update(self, request: Request, workflow_id: str) -> Response:
        body, source, _ = _body_and_project(request)
        workflow = workflows.replace_workflow(request.user, workflow_id, body, source)
        return Response(workflow_data(workflow))

    @extend_schema(request=None, responses={204: None, **errors(401, 403, 404)})
    def destroy(self, request: Request, workflow_id: str) -> HttpResponse:
        workflows.delete_workflow(request.user, workflow_id)
        return HttpResponse(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=RunInput, responses={201: WorkflowStartedData, **errors(400, 401, 404)})
    # A run's body is JSON only (the workflow's own body may be YAML).
    @action(detail=True, methods=["post"], parser_classes=[BodyParser])
    def run(self, request: Request, workflow_id: str) -> Response:
        if not isinstance(request.data, dict):
            raise BadRequest.naming("body", "must be an object")
        given = RunInput(data=request.data)
        given.is_valid(raise_exception=True)
        values = given.validated_data.get("input", {})
        started = runs.run_workflow(request.user, workflow_id, values)
        body = {"process": process_data(started.process), "runId": started.run.public_id}
        return Response(
            WorkflowStartedData.model_validate(body).model_dump(mode="json"),
            status=status.HTTP_201_CREATED,
        )


class RunViewSet(viewsets.ViewSet):
    lookup_field = "run_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="runs_list",
        parameters=[
            OpenApiParameter(
                "process",
                str,
                description="the run's process, tp_…",
                pattern=public_id_pattern("tp"),
            ),
            OpenApiParameter("clientType", str, enum=ClientType.values),
            OpenApiParameter("trigger", str, enum=TriggerType.values),
            OpenApiParameter("status", str, enum=RunStatus.values),
            OpenApiParameter(
                "since",
                str,
                description="ISO 8601 time with its zone: runs started since",
                pattern=run_queries.SINCE_PATTERN,
            ),
            *PAGE_PARAMETERS,
        ],
        responses={200: RunPage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        params = request.query_params
        rows = run_queries.filtered_runs(
            request.user,
            process=params.get("process"),
            client_type=params.get("clientType"),
            trigger=params.get("trigger"),
            status=params.get("status"),
            since=params.get("since"),
        )
        return paginated(request, self, rows, run_data)

    @extend_schema(responses={200: RunObject, **errors(401, 404)})
    def retrieve(self, request: Request, run_id: str) -> Response:
        return Response(run_data(run_queries.get_visible_run(request.user, run_id)))


class NotificationViewSet(viewsets.ViewSet):
    lookup_field = "notification_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="notifications_list",
        parameters=[
            OpenApiParameter("unread", str, enum=["true", "false"]),
            *PAGE_PARAMETERS,
        ],
        responses={200: NotificationPage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        rows = notifications.filtered_notifications(
            request.user, unread=request.query_params.get("unread")
        )
        return paginated(request, self, rows, notification_data)

    @extend_schema(request=None, responses={200: NotificationObject, **errors(401, 404)})
    @action(detail=True, methods=["post"])
    def read(self, request: Request, notification_id: str) -> Response:
        notification = notifications.mark_read(request.user, notification_id)
        return Response(notification_data(notification))

    @extend_schema(request=None, responses={200: ReadAllData, **errors(401)})
    @action(detail=False, methods=["post"], url_path="read-all")
    def read_all(self, request: Request) -> Response:
        marked = notifications.mark_all_read(request.user)
        return Response({"marked": marked, "unread": 0})
