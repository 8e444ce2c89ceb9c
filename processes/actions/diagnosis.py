"""Tool health: an ambiguous tool failure opened a diagnosis; an agrajag process takes it.

agrajag runs in the project's system session of the service (owner `_system`, `system=true`),
spawned from the `agrajag` recipe (category service, so users never see it in their process
lists). Its turn runs on a worker, not in the failing tool's lane.
"""

from __future__ import annotations

from django.db import transaction

from processes.actions.create import create_process
from processes.actions.sessions import system_session
from processes.actions.steer import steer_process
from processes.models import PendingKind
from vancetope.tenancy.models import Project
from vancetope.tools.models import ToolDiagnosis

AGRAJAG = "agrajag"


def spawn_agrajag(diagnosis_id: int) -> None:
    diagnosis = ToolDiagnosis.objects.select_related("project").get(pk=diagnosis_id)
    with transaction.atomic():
        # The first runs of a project's agrajag at once would each find no system session and
        # open one (a process in each, all but the last link lost): the project's row, locked
        # until the session and its link are committed, lets one request at a time look.
        list(Project.objects.select_for_update().filter(pk=diagnosis.project_id).values("pk"))
        session = system_session(diagnosis.project, AGRAJAG)
    process = create_process(
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
    steer_process(process.pk, f"diagnose {diagnosis.tool}", kind=PendingKind.CONTROL)
