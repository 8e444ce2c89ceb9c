"""`ctx.tools` for a process: the tool kernel's ToolBox, told who calls and where its client is."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from processes.models import ThinkProcess
from sessions_app.models import Session, SessionStatus
from vancetope.tools.dispatch import Appender, Caller, ClientSide, EventOut, ToolBox


def caller_of(process: ThinkProcess) -> Caller:
    snapshot = process.recipe_snapshot
    session = process.session
    return Caller(
        process_id=process.pk,
        public_id=process.public_id,
        session_id=process.session_id,
        project_id=session.project_id,
        owner_id=session.owner_id,
        category=process.category,
        roles=tuple(str(role) for role in snapshot.get("roles", [])),
        allowed_add=tuple(snapshot.get("allowedToolsAdd", [])),
        allowed_remove=tuple(snapshot.get("allowedToolsRemove", [])),
    )


def client_of(session_id: int) -> Callable[[], ClientSide]:
    """The session's client as it is when the tools first need it."""

    def read() -> ClientSide:
        row = (
            Session.objects.filter(pk=session_id).values("status", "system", "client_tools").first()
        )
        if row is None:
            return ClientSide()
        bound = row["status"] == SessionStatus.OPEN and not row["system"]
        return ClientSide(tools=list(row["client_tools"]), bound=bound)

    return read


def toolbox_for(
    process: ThinkProcess,
    engine_default: Iterable[str],
    boundary: Callable[[], None],
    *,
    conversation: Appender | None = None,
    events: EventOut | None = None,
) -> ToolBox:
    from processes.actions.diagnosis import spawn_agrajag

    return ToolBox(
        lambda: caller_of(process),
        engine_default,
        boundary,
        client=client_of(process.session_id),
        conversation=conversation,
        events=events,
        on_new_diagnosis=spawn_agrajag,
    )
