"""Sessions as rows: who sees which, loading one, the client's tools, the system user.
Opening, resuming, closing and suspending a session reach its processes, so they live above
this app, in processes/actions/sessions.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from sessions_app.models import Session
from sessions_app.signals import tools_registered
from vancetope.errors import NotFound
from vancetope.infra import fastsql

# The owner of system sessions (cron, webhooks, service engines): never logs in.
SYSTEM_USERNAME = "_system"


@dataclass(frozen=True)
class FingerprintData:
    machine_id: str
    working_dir: str = ""
    user_home: str = ""
    os_user: str = ""


def visible_sessions(user: Any) -> QuerySet[Session]:
    if not user.is_authenticated:
        return Session.objects.none()
    return Session.objects.filter(owner=user).select_related("project")


def get_visible_session(user: Any, session_id: int) -> Session:
    session = visible_sessions(user).filter(pk=session_id).first()
    if session is None:
        raise NotFound(f"session sess_{session_id} not found")
    return session


def load_session(session_id: int) -> Session:
    """The session row as it is now (prepared SQL, no joins)."""
    found = fastsql.select(Session, "{id} = %s", [session_id])
    if not found:
        raise NotFound(f"session sess_{session_id} not found")
    return found[0]


def offered_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A client's tools as a session keeps them: by name, the last declaration wins."""
    return list({tool["name"]: tool for tool in tools}.values())


def register_tools(session: Session, tools: list[dict[str, Any]]) -> int:
    """Replace the tools the bound client offers (by name, the last registration wins)."""
    offered = offered_tools(tools)
    Session.objects.filter(pk=session.pk).update(client_tools=offered)
    session.client_tools = offered
    tools_offered(session, offered)
    return len(offered)


def tools_offered(session: Session, offered: list[dict[str, Any]]) -> None:
    """Tell the apps that listen that a person's client offers these tools now (by
    `tools-register`, or with its resume): `tools_registered`, sent robustly."""
    if session.is_human and offered:
        tools_registered.send_robust(Session, session=session, tools=[t["name"] for t in offered])


def system_user() -> Any:
    users = get_user_model()
    user, _ = users.objects.get_or_create(
        username=SYSTEM_USERNAME, defaults={"is_active": False, "first_name": SYSTEM_USERNAME}
    )
    return user
