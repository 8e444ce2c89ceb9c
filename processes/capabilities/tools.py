"""`ctx.tools` for a process: the tool kernel's ToolBox, told who calls and where its client is."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from processes.models import ThinkProcess
from processes.queries import session_facts
from sessions_app.events import emit_event
from sessions_app.models import Session, SessionStatus
from vancetope.infra import fastsql
from vancetope.tools.caller import Appender, Caller, ClientSide, EventOut
from vancetope.tools.dispatch import ToolBox
from vancetope.tools.replay import CallJournal

if TYPE_CHECKING:
    from processes.lane.lease import SessionClient


class SessionFacts:
    """What the tools need of the process's session, read once, when they first need it: who
    calls (its project and owner) and where its client is. One statement for both, and none for
    a turn whose engine offers no tools; none either in a lane, whose lease read the client
    (`known`) and whose session's owner and project are kept per worker."""

    FIELDS = ("project_id", "owner_id", "status", "system", "client_tools")

    def __init__(self, session_id: int, known: SessionClient | None = None) -> None:
        self._session_id = session_id
        self._known = known
        self._row: dict[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        if self._row is None:
            facts = session_facts(self._session_id) if self._known is not None else None
            if self._known is not None and facts is not None:
                tools = self._known.tools
                self._row = {
                    "project_id": facts.project_id,
                    "owner_id": facts.owner_id,
                    "bound": self._known.bound,
                    # As stored: JSON text unless the database driver decoded it.
                    "client_tools": json.loads(tools) if isinstance(tools, str) else tools or [],
                }
            else:
                found = fastsql.values(Session, self.FIELDS, "{id} = %s", [self._session_id])
                row = dict(zip(self.FIELDS, found[0], strict=True)) if found else {}
                if row:
                    row["bound"] = row["status"] == SessionStatus.OPEN and not row["system"]
                self._row = row
        return self._row

    def client(self) -> ClientSide:
        row = self.row()
        if not row:
            return ClientSide()
        return ClientSide(tools=list(row["client_tools"]), bound=row["bound"])


def acting_user_of(process: ThinkProcess) -> int | None:
    """The user a service process acts for: the `originatingUserId` its spawn job carried
    (None for any other process)."""
    if process.category != "service":
        return None
    params = process.engine_params if isinstance(process.engine_params, dict) else {}
    found = params.get("originatingUserId")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def user_client(project_id: int, user_id: int) -> tuple[int, ClientSide] | None:
    """The user's most recently active open session in the project that a client of theirs
    is bound to, and its client: where a tool runs as that user."""
    found = (
        Session.objects.filter(
            owner_id=user_id, project_id=project_id, status=SessionStatus.OPEN, system=False
        )
        .order_by("-last_activity_at", "-pk")
        .values_list("pk", "client_tools")
        .first()
    )
    if found is None:
        return None
    return found[0], ClientSide(tools=list(found[1]), bound=True)


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
        acting_user_id=acting_user_of(process),
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
    client: SessionClient | None = None,
    health_revision: int | None = None,
    journal: CallJournal | None = None,
) -> ToolBox:
    """`client`, `health_revision`: what the lane's lease read of the session's client and
    the tool health revision (None: read when first needed)."""
    from processes.actions.diagnosis import spawn_agrajag

    session = SessionFacts(process.session_id, client)
    return ToolBox(
        lambda: caller_of(process, session),
        engine_default,
        boundary,
        client=session.client,
        conversation=conversation,
        events=events,
        on_new_diagnosis=spawn_agrajag,
        user_client=user_client,
        emit_to_session=emit_event,
        health_revision=health_revision,
        journal=journal,
    )
