"""Thinking-space helpers: a node by its id, messages planted in a node's conversation, the
space events of a session, and a space started on another Brain process."""

from __future__ import annotations

from typing import Any

from processes.models import ConversationMessage
from sessions_app.models import SessionEvent
from spaces.models import ThinkingNode
from tests.e2e.brain import (
    last_line,
    manage_shell,
)


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


def start_space(env: dict[str, str], chat_process_id: str, children: int) -> list[str]:
    """The session's space with `children` root children, made from another OS process as the
    agent's tools would; the children's ids."""
    code = (
        "from spaces.actions import agent; "
        f"p = {int(chat_process_id[3:])}; agent.start_space(p); "
        f"print(' '.join(agent.split(p, f'c{{n}}', 'go')[1].public_id for n in range({children})))"
    )
    return last_line(manage_shell(env, code, timeout=180)).split()
