"""Inbox items posted for a process, and the user messages its conversation received."""

from __future__ import annotations

from typing import Any

from inbox.models import InboxItem
from inbox.services import post_item
from processes.models import ConversationMessage, ThinkProcess


def approval(process: ThinkProcess, **extra: Any) -> InboxItem:
    return post_item(process, "APPROVAL", "Deploy to production?", "The **tests** pass.", **extra)


def question(process: ThinkProcess, options: list[str] | None = None, **extra: Any) -> InboxItem:
    return post_item(process, "QUESTION", "Which year?", "For the report.", options, **extra)


def user_messages(process_id: int) -> list[str]:
    rows = ConversationMessage.objects.filter(process_id=process_id, role="user")
    return list(rows.order_by("index").values_list("content", flat=True))
