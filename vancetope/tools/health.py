"""Tool health: the queue of ambiguous failures, the verdicts, and what agrajag may use of it.

An ambiguous failure opens a ToolDiagnosis for (project, tool), or joins the open one: one
agrajag run handles every failure of a tool that arrives before it finishes. Spawning that run
is the process app's job (processes/actions/diagnosis.py): the tool layer is a kernel and only
says that a diagnosis is new.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from vancetope.infra import revisions
from vancetope.tools.checker import classify
from vancetope.tools.models import (
    DiagnosisSource,
    DiagnosisStatus,
    HealthStatus,
    ToolDiagnosis,
    ToolHealth,
    ToolHealthRevision,
)

if TYPE_CHECKING:
    from vancetope.tools.caller import Caller

log = logging.getLogger(__name__)


def queue_diagnosis(caller: Caller, tool: str, error: str) -> tuple[ToolDiagnosis, bool]:
    """Coalesce the failure into the tool's open diagnosis, or open one; returns it and
    whether it is new (and so needs an agrajag run)."""
    return open_diagnosis(caller.project_id, tool, error, caller.owner_id, DiagnosisSource.CHECKER)


def open_diagnosis(
    project_id: int,
    tool: str,
    error: str,
    originating_user_id: int | None,
    source: DiagnosisSource,
) -> tuple[ToolDiagnosis, bool]:
    """The same for any trigger (the checker, a system event, a staff request)."""
    for _ in range(3):
        joined = ToolDiagnosis.objects.filter(
            project_id=project_id, tool=tool, status=DiagnosisStatus.QUEUED
        ).update(failures=F("failures") + 1, last_error=error)
        if joined:
            found = ToolDiagnosis.objects.get(
                project_id=project_id, tool=tool, status=DiagnosisStatus.QUEUED
            )
            return found, False
        try:
            with transaction.atomic():
                diagnosis = ToolDiagnosis.objects.create(
                    project_id=project_id,
                    tool=tool,
                    last_error=error,
                    originating_user_id=originating_user_id,
                    source=source,
                )
        except IntegrityError:
            continue  # another lane opened it first: join that one
        return diagnosis, True
    raise RuntimeError(f"could not queue a diagnosis of {tool}")


def write_tool_health(
    *,
    project_id: int,
    tool: str,
    status: HealthStatus,
    classification: str,
    evidence: str,
    checked_by_id: int | None = None,
) -> ToolHealth:
    health, _ = ToolHealth.objects.update_or_create(
        project_id=project_id,
        tool=tool,
        defaults={
            "status": status,
            "classification": classification,
            "evidence": evidence,
            "checked_at": timezone.now(),
            "checked_by_id": checked_by_id,
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


# Project id → (the tool health revision its down tools were read at, those tools).
_down: dict[int, tuple[int, dict[str, str]]] = {}
_down_lock = threading.Lock()
# Projects whose down tools a worker keeps (all are dropped when there are more).
CACHED_PROJECTS = 4096


def down_tools(project_id: int, revision: int | None) -> Mapping[str, str]:
    """The project's tools that are DOWN, with why, as of tool health `revision` (what the
    lane's lease read; None: read them now). Revision 0 (no health was ever written) needs no
    statement; otherwise a project's are read once per revision in this worker OS process."""
    if revision == 0:
        return {}
    if revision is not None:
        with _down_lock:
            cached = _down.get(project_id)
        if cached is not None and cached[0] == revision:
            return cached[1]
    rows = ToolHealth.objects.filter(project_id=project_id, status=HealthStatus.DOWN)
    found = dict(rows.values_list("tool", "classification"))
    if revision is not None:
        with _down_lock:
            if len(_down) >= CACHED_PROJECTS:
                _down.clear()
            _down[project_id] = (revision, found)
    return found


def forget_cached() -> None:
    """Drop every cached project's down tools (tests acting as a fresh worker)."""
    with _down_lock:
        _down.clear()


def raise_health_revision(**_: Any) -> None:
    """post_save and post_delete of a ToolHealth row (connected in ToolsConfig.ready): in the
    writer's transaction, so a lease that reads the new revision finds the new row."""
    revisions.raise_revision(ToolHealthRevision)


def health_revision_sql() -> str:
    """The tool health revision as a scalar subquery, for the lane's lease to read it."""
    return revisions.revision_sql(ToolHealthRevision)


class ToolHealthAccess:
    """`ctx.tool_health` (engines/capabilities.py `ToolHealth`) for a process of a project."""

    def __init__(self, project_id: int, process_id: int) -> None:
        self._project_id = project_id
        self._process_id = process_id

    def failures(self, diagnosis_id: int) -> str:
        diagnosis = ToolDiagnosis.objects.filter(pk=diagnosis_id).first()
        if diagnosis is None:
            return ""
        return f"{diagnosis.failures} failure(s), last: {diagnosis.last_error}"

    def classify(self, error: str) -> str:
        return str(classify(error))

    def write(self, tool: str, status: str, classification: str, evidence: str) -> None:
        write_tool_health(
            project_id=self._project_id,
            tool=tool,
            status=HealthStatus(status),
            classification=classification,
            evidence=evidence,
            checked_by_id=self._process_id,
        )

    def current(self, tool: str) -> tuple[str, str]:
        health = ToolHealth.objects.get(project_id=self._project_id, tool=tool)
        return str(health.status), health.classification

    def finish(self, diagnosis_id: int) -> None:
        finish_diagnosis(diagnosis_id)
