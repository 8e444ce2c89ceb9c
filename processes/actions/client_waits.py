"""Tasks waiting for a client: a turn that called a client tool while no client offered it
left its process BLOCKED (`requires client tool: <name>`, vancetope/tools/errors.py), its
message pending. When a client of the session offers that tool, the task goes on."""

from __future__ import annotations

from processes.lane.dispatch import wake_lane
from processes.models import ThinkProcess
from processes.states import Status
from vancetope.tools.errors import ClientToolRequired


def wake_waiting_for_client(session_id: int, tools: list[str]) -> list[int]:
    """Wake the session's processes BLOCKED on one of `tools`; their ids."""
    reasons = [ClientToolRequired(tool).reason for tool in tools]
    waiting = list(
        ThinkProcess.objects.filter(
            session_id=session_id, status=Status.BLOCKED, last_error__in=reasons
        ).values_list("pk", flat=True)
    )
    for process_id in waiting:
        wake_lane(process_id)
    return waiting
