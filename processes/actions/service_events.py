"""Spawning service engines from every trigger, each coalesced into one run per burst.

A service engine (agrajag) runs when:
- the dispatcher's checker finds a tool failure no rule explains (vancetope/tools/dispatch.py,
  through `spawn_agrajag`);
- a system event about one of its subjects is posted to its queue (`post_service_event`): a
  person's client offers again a tool that agrajag found DOWN (sessions_app.services
  `register_tools`), so that it is probed again, as that person;
- a staff member asks for a run over REST (`request_service_run`,
  POST /api/services/{service}/runs).

Every trigger goes through the same queue: while a run about the same subject (a tool) is
open, a new event only joins it (its count and last detail), so a burst of events is one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from processes.actions.diagnosis import AGRAJAG, spawn_agrajag
from vancetope.errors import BadRequest, Conflict, Forbidden
from vancetope.tenancy.services import get_visible_project
from vancetope.tools.health import open_diagnosis
from vancetope.tools.models import DiagnosisSource, HealthStatus, ToolDiagnosis, ToolHealth

# The service engines a trigger may name.
SERVICES = (AGRAJAG,)
SUBJECT_MAX = 200


@dataclass(frozen=True)
class ServiceEvent:
    """Something a service should look at: `subject` (for agrajag, a tool's name) in a
    project, with what happened (`detail`) and the user it happened to, whom the run acts
    for."""

    project_id: int
    service: str
    subject: str
    detail: str
    originating_user_id: int | None = None


@dataclass(frozen=True)
class Queued:
    diagnosis: ToolDiagnosis
    # False: the event joined a run that was open already (coalesced).
    new: bool


def post_service_event(
    event: ServiceEvent, source: DiagnosisSource = DiagnosisSource.EVENT
) -> Queued:
    """Queue the event: it opens a run of its service (spawned now) or joins the open one."""
    if event.service not in SERVICES:
        raise BadRequest(
            f"service must be one of {', '.join(SERVICES)}, not {event.service!r}",
            field="service",
        )
    diagnosis, new = _queue(event, source)
    if new:
        spawn_agrajag(diagnosis.pk)
        diagnosis.refresh_from_db()
    return Queued(diagnosis, new)


def _queue(event: ServiceEvent, source: DiagnosisSource) -> tuple[ToolDiagnosis, bool]:
    """The open run the event joined, or the one it opened. A run can settle (agrajag writes
    its verdict) between the event joining it and its being read back: the event then counted
    in a run that is over, and it is queued again, into the next one."""
    for _ in range(3):
        try:
            return open_diagnosis(
                event.project_id, event.subject, event.detail, event.originating_user_id, source
            )
        except ToolDiagnosis.DoesNotExist:
            continue
    raise Conflict(f"the runs about {event.subject} keep settling; try again", field="subject")


def tools_offered_again(project_id: int, user_id: int, session: str, tools: list[str]) -> int:
    """A person's client registered tools: each that agrajag found DOWN is a system event, so
    that it is probed again, as that person. How many events were posted."""
    down = ToolHealth.objects.filter(
        project_id=project_id, tool__in=tools, status=HealthStatus.DOWN
    ).values_list("tool", flat=True)
    posted = 0
    for tool in down:
        detail = f"the client of {session} offers {tool} again"
        post_service_event(ServiceEvent(project_id, AGRAJAG, tool, detail, user_id))
        posted += 1
    return posted


def request_service_run(user: Any, service: str, body: Any) -> Queued:
    """A staff member asks a service to run about a subject of a project they see: it acts
    for them. A field missing or wrong is a 400 naming it."""
    if not (user.is_authenticated and user.is_staff):
        raise Forbidden("only staff may request a service run")
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", field="body")
    project_id, subject = body.get("projectId"), body.get("subject")
    detail = body.get("detail", "")
    if not isinstance(project_id, str) or not project_id:
        raise BadRequest("projectId must be a project id like proj_default", field="projectId")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > SUBJECT_MAX:
        raise BadRequest(
            f"subject must be the tool to look at (1 to {SUBJECT_MAX} characters)",
            field="subject",
        )
    if not isinstance(detail, str):
        raise BadRequest("detail must be text", field="detail")
    unknown = sorted(set(body) - {"projectId", "subject", "detail"})
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]}", field=unknown[0])
    project = get_visible_project(user, project_id)
    detail = detail or f"requested by {user.get_username()}"
    event = ServiceEvent(project.pk, service, subject.strip(), detail, user.pk)
    return post_service_event(event, DiagnosisSource.STAFF)
