"""REST: /api/cron-jobs (CRUD, and `run`: fire now). Bodies are checked by triggers/cron.py
(400 naming the field); the reply is the cron job object, with its recent firings on a GET of
one job and on `run`."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.protocol.objects import Outgoing
from triggers import cron, cron_fire
from triggers.presenters import cron_job_data, firing_data
from vancetope.api import PAGE_PARAMETERS, Body, Page, errors, paginated
from vancetope.jsonbody import BodyParser


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
    firings: list[CronFiringObject] | None = None


class CronJobPage(Page[CronJobObject]):
    """A page of cron jobs, oldest first."""


class CronJobInput(Body):
    """A cron job body (PROTOCOL.md, "Cron job")."""

    name: str | None = None
    projectId: str | None = None
    schedule: str
    timezone: str = "UTC"
    enabled: bool = True
    overlap: Literal["skip", "allow"] = "skip"
    action: dict[str, Any]


class CronJobPatch(Body):
    """The fields of a cron job a PATCH changes; the others stay."""

    name: str | None = None
    schedule: str | None = None
    timezone: str | None = None
    enabled: bool | None = None
    overlap: Literal["skip", "allow"] | None = None
    action: dict[str, Any] | None = None


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

    @extend_schema(request=CronJobInput, responses={201: CronJobObject, **errors(400, 401, 404)})
    def create(self, request: Request) -> Response:
        job = cron.create_job(request.user, request.data)
        return Response(cron_job_data(job), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: CronJobObject, **errors(401, 404)})
    def retrieve(self, request: Request, job_id: str) -> Response:
        return Response(cron_job_data(cron.get_visible_job(request.user, job_id), firings=True))

    @extend_schema(request=CronJobPatch, responses={200: CronJobObject, **errors(400, 401, 404)})
    def partial_update(self, request: Request, job_id: str) -> Response:
        job = cron.update_job(request.user, job_id, request.data)
        return Response(cron_job_data(job))

    @extend_schema(request=None, responses={204: None, **errors(401, 404)})
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
