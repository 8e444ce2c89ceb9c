"""REST: /api/cron-jobs (CRUD, and `run`: fire now). Bodies are checked by triggers/cron/jobs.py
(400 naming the field); the reply is the cron job object, with its recent firings on a GET of
one job and on `run`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from pydantic import Field, WithJsonSchema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from protocol.objects import Outgoing
from triggers.cron import fire as cron_fire
from triggers.cron import jobs as cron
from triggers.presenters import cron_job_data, firing_data
from vancetope.api import (
    OMITTED,
    PAGE_PARAMETERS,
    Body,
    InputBody,
    Page,
    change_body,
    errors,
    paginated,
)
from vancetope.ids import public_id_pattern
from vancetope.jsonbody import BodyParser
from vancetope.memory.linker import STRATEGIES


class CronFiringObject(Outgoing):
    """One firing: ran (its run), skipped (why) or failed (the error)."""

    scheduledFor: str
    manual: bool
    claimedAt: str
    outcome: Literal["claimed", "ran", "skipped", "failed"]
    reason: str | None
    runId: str | None


class CronJobObject(Outgoing):
    """A cron job (triggers/presenters.py `cron_job_data`)."""

    id: str
    projectId: str
    name: str
    schedule: str
    description: str
    timezone: str
    enabled: bool
    overlap: Literal["skip", "allow"]
    action: dict[str, Any]
    nextRunAt: str | None
    lastRunId: str | None
    createdAt: str
    updatedAt: str
    # Only in the answer of a GET of one job (and of `run`): not required.
    firings: list[CronFiringObject] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )


class CronJobPage(Page[CronJobObject]):
    """A page of cron jobs, oldest first."""


class ProcessConstraints(InputBody):
    maxTasks: Annotated[int, Field(ge=1)] = 1
    maxTokens: Annotated[int, Field(ge=1)] | None = None
    stopOnApproval: bool = True
    stopOnClientTool: bool = True


class ProcessContinueAction(InputBody):
    """Continue a process within maxTasks / maxTokens."""

    type: Literal["process_continue"]
    processId: Annotated[str, Field(pattern=public_id_pattern("tp"))]
    constraints: ProcessConstraints = ProcessConstraints()


class RunWorkflowCronAction(InputBody):
    """Run a workflow with a fixed input (a value for each of its inputs)."""

    type: Literal["run_workflow"]
    workflowId: str
    input: dict[str, Any] = {}


class LinkerConstraints(InputBody):
    maxLlmCalls: Annotated[int, Field(ge=1)] | None = None


class BrainLinkerAction(InputBody):
    """The knowledge graph's linker; no strategies: all of them."""

    type: Literal["brain_linker"]
    strategies: list[Literal[STRATEGIES]] = []  # type: ignore[valid-type]
    constraints: LinkerConstraints = LinkerConstraints()


# What a firing does, by `type` (triggers/cron.py checked_action).
CronJobAction = Annotated[
    ProcessContinueAction | RunWorkflowCronAction | BrainLinkerAction,
    Field(discriminator="type"),
]
# Five cron fields (minute hour day month weekday), IANA time zone names, a name of at most
# 100 characters: the rules triggers/cron.py keeps (the schedule's pattern a narrower grammar
# than it reads, every text of which it takes).
Schedule = Annotated[str, Field(pattern=cron.SCHEDULE_PATTERN)]
TimeZone = Annotated[str, WithJsonSchema({"type": "string", "enum": cron.TIME_ZONES})]
JobName = Annotated[str, Field(max_length=100)]


class CronJobInput(InputBody):
    """A cron job body (docs/protocol.md, "Cron job")."""

    name: JobName = ""
    projectId: str | None = None
    schedule: Schedule
    timezone: TimeZone = "UTC"
    enabled: bool = True
    overlap: Literal["skip", "allow"] = "skip"
    action: CronJobAction


class CronJobPatch(InputBody):
    """The fields of a cron job a PATCH changes; the others stay."""

    name: JobName = OMITTED
    schedule: Schedule = OMITTED
    timezone: TimeZone = OMITTED
    enabled: bool = OMITTED
    overlap: Literal["skip", "allow"] = OMITTED
    action: CronJobAction = OMITTED


class CronFiredData(Body):
    """`run`: the firing it made, and the job after it."""

    firing: CronFiringObject
    job: CronJobObject


class CronJobViewSet(viewsets.ViewSet):
    lookup_field = "job_id"
    lookup_value_regex = r"[^/]+"
    parser_classes = [BodyParser]

    @extend_schema(
        operation_id="cron_jobs_list",
        parameters=PAGE_PARAMETERS,
        responses={200: CronJobPage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        rows = cron.visible_jobs(request.user).order_by("pk")
        return paginated(request, self, rows, cron_job_data)

    @extend_schema(
        request=CronJobInput, responses={201: CronJobObject, **errors(400, 401, 403, 404)}
    )
    def create(self, request: Request) -> Response:
        job = cron.create_job(request.user, request.data)
        return Response(cron_job_data(job), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: CronJobObject, **errors(401, 404)})
    def retrieve(self, request: Request, job_id: str) -> Response:
        return Response(cron_job_data(cron.get_visible_job(request.user, job_id), firings=True))

    @extend_schema(
        request=CronJobPatch, responses={200: CronJobObject, **errors(400, 401, 403, 404)}
    )
    def partial_update(self, request: Request, job_id: str) -> Response:
        job = cron.update_job(request.user, job_id, change_body(request))
        return Response(cron_job_data(job))

    @extend_schema(request=None, responses={204: None, **errors(401, 403, 404)})
    def destroy(self, request: Request, job_id: str) -> HttpResponse:
        cron.delete_job(request.user, job_id)
        return HttpResponse(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={201: CronFiredData, **errors(401, 404)})
    @action(detail=True, methods=["post"])
    def run(self, request: Request, job_id: str) -> Response:
        firing = cron_fire.fire_now(request.user, job_id)
        job = cron.get_visible_job(request.user, job_id)
        body = {"firing": firing_data(firing), "job": cron_job_data(job, firings=True)}
        return Response(
            CronFiredData.model_validate(body).model_dump(mode="json"),
            status=status.HTTP_201_CREATED,
        )
