"""The thinking space object of docs/protocol.md, whole, as every client sees it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from spaces.models import NODE_ORDER, ThinkingNode, ThinkingSpace


def _at(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def node_data(node: ThinkingNode) -> dict[str, Any]:
    return {
        "id": node.public_id,
        "parentId": f"node_{node.parent_id}" if node.parent_id else None,
        "depth": node.depth,
        "sortOrder": node.sort_order,
        "sessionId": f"sess_{node.session_id}",
        "chatProcessId": f"tp_{node.chat_process_id}",
        "title": node.title,
        "state": node.state,
        "checkpointRefreshingAt": _at(node.checkpoint_refreshing_at),
        "inheritedHandoff": node.inherited_handoff or None,
        "checkpointHandoff": node.checkpoint_handoff or None,
        "returnedHandoff": node.returned_handoff or None,
        "createdAt": node.created_at.isoformat(),
        "updatedAt": node.updated_at.isoformat(),
    }


def space_data(space: ThinkingSpace, nodes: list[ThinkingNode] | None = None) -> dict[str, Any]:
    """The space with its nodes in a stable order (depth, sort order, id): read fresh unless
    given."""
    if nodes is None:
        nodes = list(ThinkingNode.objects.filter(space_id=space.pk).order_by(*NODE_ORDER))
    return {
        "id": space.public_id,
        "version": space.version,
        "revision": space.revision,
        "rootNodeId": f"node_{space.root_node_id}" if space.root_node_id else None,
        "projectId": space.project.public_id,
        "nodes": [node_data(node) for node in nodes],
        "createdAt": space.created_at.isoformat(),
        "updatedAt": space.updated_at.isoformat(),
    }
