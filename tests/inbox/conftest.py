"""Fixtures of the inbox tests: a session of alice's with its (ford) chat process, and items
that process posts."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.models import InboxItem
from inbox.services import post_item
from processes.models import ConversationMessage, ThinkProcess
from sessions_app.models import Session
from tests.conftest import Tenancy, open_session


@pytest.fixture
def session(alice: Tenancy) -> Session:
    return open_session(alice)


@pytest.fixture
def origin(session: Session) -> ThinkProcess:
    """The process that posts: the session's chat process (ford, IDLE)."""
    assert session.chat_process_id is not None
    return ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)


def approval(process: ThinkProcess, **extra: Any) -> InboxItem:
    return post_item(process, "APPROVAL", "Deploy to production?", "The **tests** pass.", **extra)


def question(process: ThinkProcess, options: list[str] | None = None, **extra: Any) -> InboxItem:
    return post_item(process, "QUESTION", "Which year?", "For the report.", options, **extra)


def user_messages(process_id: int) -> list[str]:
    rows = ConversationMessage.objects.filter(process_id=process_id, role="user")
    return list(rows.order_by("index").values_list("content", flat=True))
