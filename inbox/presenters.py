"""The inbox item object of docs/protocol.md, shared by the WebSocket, REST and the web UI."""

from __future__ import annotations

from typing import Any

from inbox.models import InboxItem
from protocol.vocabulary import iso


def item_data(item: InboxItem) -> dict[str, Any]:
    """Read with its project and answerer (`services.visible_items` selects both)."""
    return {
        "id": item.public_id,
        "kind": item.kind,
        "title": item.title,
        "body": item.body,
        "options": [str(option) for option in item.options or []],
        "status": item.status,
        "answer": item.answer,
        "answeredBy": item.answered_by.get_username() if item.answered_by else None,
        "answeredAt": iso(item.answered_at),
        "expiresAt": iso(item.expires_at),
        "defaultAction": item.default_action,
        # A process posted it (tp_), or a system client's run did (run_: the brain linker's).
        "originProcessId": item.origin_public_id
        if item.origin_public_id.startswith("tp_")
        else None,
        "originRunId": item.origin_public_id if item.origin_public_id.startswith("run_") else None,
        # The process whose question it is, when its parent posted it (null: the poster's own).
        "askedBy": item.asked_by or None,
        "originDelivered": item.origin_delivered,
        "originNote": item.origin_note or None,
        "projectId": item.project.public_id,
        "createdAt": iso(item.created_at),
    }
