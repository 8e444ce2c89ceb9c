"""Fixtures of the thinking-space tests: alice's arthur session, and a space grown from it
through the services the thinking_* tools call."""

from __future__ import annotations

from typing import Any

import pytest

from processes.models import ConversationMessage
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData, create_session
from spaces.models import ThinkingNode
from tests.conftest import Tenancy


def arthur_session(tenancy: Tenancy) -> Session:
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="arthur",
    )


@pytest.fixture
def root_session(alice: Tenancy) -> Session:
    return arthur_session(alice)


def node(public_id: str) -> ThinkingNode:
    return ThinkingNode.objects.get(pk=int(public_id.removeprefix("node_")))


def plant(node: ThinkingNode, *texts: str) -> None:
    """Messages in a node's own conversation, as its turns would have stored them."""
    start = ConversationMessage.objects.filter(process_id=node.chat_process_id).count()
    for offset, text in enumerate(texts):
        ConversationMessage.objects.create(
            process_id=node.chat_process_id, index=start + offset, role="user", content=text
        )
    from processes.models import ThinkProcess

    ThinkProcess.objects.filter(pk=node.chat_process_id).update(
        conversation_length=start + len(texts)
    )


def space_events(session_id: int) -> list[dict[str, Any]]:
    rows = SessionEvent.objects.filter(session_id=session_id, event="space-state").order_by("seq")
    return [row.data["space"] for row in rows]
