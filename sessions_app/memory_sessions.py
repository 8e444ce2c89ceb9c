"""How the memory kernel finds a person's session (vancetope/memory/scopes.py): the kernel
imports no app, so this app tells it, in SessionsConfig.ready()."""

from __future__ import annotations

from typing import Any

from sessions_app.models import Session
from vancetope.memory.scopes import SessionRef, register_session_finder


def find_owned_session(user: Any, session_pk: int) -> SessionRef | None:
    if not user.is_authenticated:
        return None
    row = Session.objects.filter(pk=session_pk, owner_id=user.pk).values("project_id").first()
    return SessionRef(session_pk, row["project_id"], int(user.pk)) if row else None


def register() -> None:
    register_session_finder(find_owned_session)
