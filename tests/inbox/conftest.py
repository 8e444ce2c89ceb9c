"""Fixtures of the inbox tests: a session of alice's with its (ford) chat process, and items
that process posts."""

from __future__ import annotations

import pytest

from processes.models import ThinkProcess
from sessions_app.models import Session
from tests.support.tenancy import Tenancy, open_session


@pytest.fixture
def session(alice: Tenancy) -> Session:
    return open_session(alice)


@pytest.fixture
def origin(session: Session) -> ThinkProcess:
    """The process that posts: the session's chat process (ford, IDLE)."""
    assert session.chat_process_id is not None
    return ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)
