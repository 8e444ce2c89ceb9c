"""How the memory kernel finds a person's session (vancetope/memory/scopes.py): the kernel
imports no app, so this app answers its `session_wanted` signal, connected on import from
SessionsConfig.ready()."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from sessions_app.models import Session
from vancetope.memory.scopes import SessionRef
from vancetope.memory.signals import session_wanted


@receiver(session_wanted, sender=SessionRef)
def find_owned_session(
    sender: Any, *, user: Any, session_pk: int, **kwargs: Any
) -> SessionRef | None:
    if not user.is_authenticated:
        return None
    row = Session.objects.filter(pk=session_pk, owner_id=user.pk).values("project_id").first()
    return SessionRef(session_pk, row["project_id"], int(user.pk)) if row else None
