"""Processes a person creates from another tool (an MCP client, an A2A agent): they run in a
session of that person's, the one they name or their tool-client session of the project.

Such a client holds no socket and brings no chat: its session (client type `mcp` or `a2a`) is
opened through `create_session` without a chat process, stays open when no request is in
flight (KEEP_OPEN), and is reused by every later create of that client type in the project.
"""

from __future__ import annotations

from typing import Any

from processes.actions.create import create_for_user
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from sessions_app.models import ClientType, DisconnectPolicy, Session, SessionStatus
from vancetope.errors import BadRequest
from vancetope.tenancy.services import get_visible_project, visible_projects


def tool_client_session(
    user: Any, project_id: str | None, client_type: str = ClientType.MCP
) -> Session:
    """The person's open (or suspended) session of `client_type` in the project, opened when
    there is none. No project named: the person's only project; with several, a 400 naming
    them."""
    if project_id:
        project = get_visible_project(user, project_id)
    else:
        projects = list(visible_projects(user).order_by("pk")[:20])
        if len(projects) != 1:
            known = ", ".join(row.public_id for row in projects) or "none"
            raise BadRequest.naming("project", f"name one of your projects ({known})")
        project = projects[0]
    found = (
        Session.objects.filter(owner_id=user.pk, project=project, client_type=client_type)
        .exclude(status=SessionStatus.CLOSED)
        .order_by("-pk")
        .first()
    )
    if found is not None:
        return found
    return create_session(
        user,
        client_type=client_type,
        project_id=project.public_id,
        on_disconnect=DisconnectPolicy.KEEP_OPEN,
        chat=False,
    )


def create_from_tool_client(
    user: Any,
    *,
    session: str | None,
    project: str | None,
    goal: str = "",
    recipe: str | None = None,
    engine: str | None = None,
    params: dict[str, Any] | None = None,
    client_type: str = ClientType.MCP,
) -> ThinkProcess:
    """A person's create from another tool: in the session they name (as REST's create),
    or in their tool-client session of `project`; started at once, it runs on its own (a
    deep think for minutes) while the client polls it."""
    if not session:
        session = tool_client_session(user, project, client_type).public_id
    return create_for_user(
        user, session, goal=goal, engine=engine, recipe=recipe, params=params, start=True
    )
