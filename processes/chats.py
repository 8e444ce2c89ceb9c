"""A person's chats to come back to: their own (not system) sessions, the latest activity
first, each with the first words typed in it and the length of its conversation, so a list
can name a chat by what it was about (the web UI's sessions page)."""

from __future__ import annotations

from typing import Any

from django.db.models import F, OuterRef, QuerySet, Subquery

from processes.models import ConversationMessage
from sessions_app.models import Session
from sessions_app.services import visible_sessions


def chats(user: Any) -> QuerySet[Session]:
    """Annotated with `first_words` (the chat process's first user message, or None) and
    `messages` (its conversation length)."""
    first = (
        ConversationMessage.objects.filter(
            process_id=OuterRef("chat_process_id"), role="user", undone_at__isnull=True
        )
        .order_by("index")
        .values("content")[:1]
    )
    return (
        visible_sessions(user)
        .filter(system=False, is_human=True)
        .annotate(first_words=Subquery(first), messages=F("chat_process__conversation_length"))
        .order_by("-last_activity_at", "-pk")
    )
