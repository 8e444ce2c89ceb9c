"""REST: POST /api/services/{service}/runs — a staff member asks a service engine to run."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from processes.actions.service_events import request_service_run
from vancetope.api import Body, errors
from vancetope.openapi import NO_NUL


class ServiceRunInput(Body):
    """What the service should look at: a subject (for agrajag, a tool) of a project."""

    projectId: str = Field(min_length=1, pattern=NO_NUL)
    # Not blank: at least one character that is not a space (and, as everywhere, no NUL).
    subject: str = Field(min_length=1, max_length=200, pattern=r"^[^\u0000]*[^\s\u0000][^\u0000]*$")
    detail: str = ""


class ServiceRunObject(Body):
    """The run the request opened, or the open run it joined (`coalesced`)."""

    service: str
    projectId: str
    subject: str
    processId: str | None
    coalesced: bool
    # How many triggers (failures, events, requests) the run has gathered so far.
    events: int


class ServiceRuns(APIView):
    @extend_schema(
        operation_id="service_runs_create",
        parameters=[OpenApiParameter("service", str, OpenApiParameter.PATH, enum=["agrajag"])],
        request=ServiceRunInput,
        responses={202: ServiceRunObject, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, service: str) -> Response:
        """Staff only: run the service about `subject` in the project (it acts for the staff
        member); a run about the same subject that is still open is joined, not repeated."""
        queued = request_service_run(request.user, service, request.data)
        diagnosis = queued.diagnosis
        data = {
            "service": service,
            "projectId": diagnosis.project.public_id,
            "subject": diagnosis.tool,
            "processId": f"tp_{diagnosis.process_id}" if diagnosis.process_id else None,
            "coalesced": not queued.new,
            "events": diagnosis.failures,
        }
        return Response(data, status=202)
