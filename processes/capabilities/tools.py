"""`ctx.tools` for a process: the tool kernel's ToolBox, told who calls and where its client is."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from processes.models import ThinkProcess
from sessions_app.models import Session, SessionStatus
from vancetope.tools.dispatch import Appender, Caller, ClientSide, EventOut, ToolBox


class SessionFacts:
    """What the tools need of the process's session, read once, when they first need it: who
    calls (its project and owner) and where its client is. One statement for both, and none for
    a turn whose engine offers no tools."""

    FIELDS = ("project_id", "owner_id", "status", "system", "client_tools")

    def __init__(self, session_id: int) -> None:
        self._session_id = session_id
        self._row: dict[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        if self._row is None:
            found = Session.objects.filter(pk=self._session_id).values(*self.FIELDS).first()
            self._row = found or {}
        return self._row

    def client(self) -> ClientSide:
        row = self.row()
        if not row:
            return ClientSide()
        bound = row["status"] == SessionStatus.OPEN and not row["system"]
        return ClientSide(tools=list(row["client_tools"]), bound=bound)


def caller_of(process: ThinkProcess, session: SessionFacts) -> Caller:
    snapshot = process.recipe_snapshot
    row = session.row()
    return Caller(
        process_id=process.pk,
        public_id=process.public_id,
        session_id=process.session_id,
        project_id=row["project_id"],
        owner_id=row["owner_id"],
        category=process.category,
        roles=tuple(str(role) for role in snapshot.get("roles", [])),
        allowed_add=tuple(snapshot.get("allowedToolsAdd", [])),
        allowed_remove=tuple(snapshot.get("allowedToolsRemove", [])),
    )


def toolbox_for(
    process: ThinkProcess,
    engine_default: Iterable[str],
    boundary: Callable[[], None],
    *,
    conversation: Appender | None = None,
    events: EventOut | None = None,
) -> ToolBox:
    from processes.actions.diagnosis import spawn_agrajag

    session = SessionFacts(process.session_id)
    return ToolBox(
        lambda: caller_of(process, session),
        engine_default,
        boundary,
        client=session.client,
        conversation=conversation,
        events=events,
        on_new_diagnosis=spawn_agrajag,
    )
