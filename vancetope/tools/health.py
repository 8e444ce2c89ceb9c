"""Tool health: the queue of ambiguous failures and the agrajag service processes.

An ambiguous failure opens a ToolDiagnosis for (project, tool), or joins the open one: one
agrajag run handles every failure of a tool that arrives before it finishes. agrajag runs in
the project's system session of the service (owner `_system`, `system=true`), spawned from the
`agrajag` recipe (category service, so users never see it in their process lists).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from processes.models import PendingKind
from sessions_app.models import ClientType, DisconnectPolicy, Session, SessionStatus
from vancetope.tenancy.models import Project, ProjectMembership
from vancetope.tools.models import (
    DiagnosisStatus,
    HealthStatus,
    ServiceSession,
    ToolDiagnosis,
    ToolHealth,
)

if TYPE_CHECKING:
    from processes.models import ThinkProcess

log = logging.getLogger(__name__)

SYSTEM_USERNAME = "_system"
AGRAJAG = "agrajag"


def queue_diagnosis(process: ThinkProcess, tool: str, error: str) -> ToolDiagnosis:
    """Coalesce the failure into the tool's open diagnosis, or open one and spawn agrajag."""
    project_id = process.session.project_id
    owner = process.session.owner_id
    for _ in range(3):
        joined = ToolDiagnosis.objects.filter(
            project_id=project_id, tool=tool, status=DiagnosisStatus.QUEUED
        ).update(failures=F("failures") + 1, last_error=error)
        if joined:
            return ToolDiagnosis.objects.get(
                project_id=project_id, tool=tool, status=DiagnosisStatus.QUEUED
            )
        try:
            with transaction.atomic():
                diagnosis = ToolDiagnosis.objects.create(
                    project_id=project_id, tool=tool, last_error=error, originating_user_id=owner
                )
        except IntegrityError:
            continue  # another lane opened it first: join that one
        spawn_agrajag(diagnosis)
        return diagnosis
    raise RuntimeError(f"could not queue a diagnosis of {tool}")


def spawn_agrajag(diagnosis: ToolDiagnosis) -> None:
    """Start an agrajag process on the diagnosis; its turn runs on a worker, not here."""
    from processes import services as processes

    session = system_session(diagnosis.project, AGRAJAG)
    process = processes.create_process(
        session,
        goal=f"Diagnose the failures of tool {diagnosis.tool}",
        recipe=AGRAJAG,
        params={
            "diagnosisId": diagnosis.pk,
            "tool": diagnosis.tool,
            "originatingUserId": diagnosis.originating_user_id,
        },
    )
    ToolDiagnosis.objects.filter(pk=diagnosis.pk).update(process=process)
    processes.steer_process(process.pk, f"diagnose {diagnosis.tool}", kind=PendingKind.CONTROL)


def system_user() -> Any:
    users = get_user_model()
    user, _ = users.objects.get_or_create(
        username=SYSTEM_USERNAME, defaults={"is_active": False, "first_name": "_system"}
    )
    return user


def system_session(project: Project, service: str) -> Session:
    """The open system session of a service in a project, made (or reopened) when needed."""
    from sessions_app import services as sessions

    link = (
        ServiceSession.objects.select_related("session")
        .filter(project=project, service=service)
        .first()
    )
    if link is not None and link.session.status == SessionStatus.OPEN:
        return link.session
    user = system_user()
    ProjectMembership.objects.get_or_create(user=user, project=project)
    if link is not None and link.session.status == SessionStatus.SUSPENDED:
        fingerprint = sessions.FingerprintData(machine_id="")
        return sessions.resume_session(user, link.session.pk, fingerprint, None).session
    session = sessions.create_session(
        user,
        client_type=ClientType.CRON,
        project_id=project.public_id,
        on_disconnect=DisconnectPolicy.KEEP_OPEN,
        system=True,
    )
    ServiceSession.objects.update_or_create(
        project=project, service=service, defaults={"session": session}
    )
    return session


def write_tool_health(
    *,
    project_id: int,
    tool: str,
    status: HealthStatus,
    classification: str,
    evidence: str,
    checked_by: ThinkProcess | None = None,
) -> ToolHealth:
    health, _ = ToolHealth.objects.update_or_create(
        project_id=project_id,
        tool=tool,
        defaults={
            "status": status,
            "classification": classification,
            "evidence": evidence,
            "checked_at": timezone.now(),
            "checked_by": checked_by,
        },
    )
    return health


def finish_diagnosis(diagnosis_id: int) -> None:
    ToolDiagnosis.objects.filter(pk=diagnosis_id, status=DiagnosisStatus.QUEUED).update(
        status=DiagnosisStatus.DONE, finished_at=timezone.now()
    )


def visible_tool_health(user: Any) -> QuerySet[ToolHealth]:
    from vancetope.tenancy.services import visible_projects

    if not user.is_authenticated:
        return ToolHealth.objects.none()
    return ToolHealth.objects.filter(project__in=visible_projects(user)).select_related("project")
