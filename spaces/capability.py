"""`ctx.space` for a node's chat process: the prompt context rendered before each LLM call.

It is made of Handoffs only: the node's inherited Handoff, its direct
siblings' checkpoint or returned Handoffs, its direct children's returned Handoffs, and the
lifecycle and tool rules. No message of any other node is read here: the rendering reads the
space's rows (titles, states, Handoffs) and nothing of any conversation. The lane asks
`space_for` while it builds the context; a process that is no node's (the marker in its
engine_params says) pays nothing.
"""

from __future__ import annotations

from typing import Any

from spaces.actions.nodes import NODE_MARKER
from spaces.models import NodeState, ThinkingNode
from spaces.store import Snapshot, load, node_of_process

RULES = """\
Rules of the thinking space:
- Each branch is its own conversation; branches share nothing but the Handoffs above.
- thinking_split makes a child branch from a Handoff you write; it is not run for you.
- thinking_checkpoint publishes where this branch stands, for its siblings.
- thinking_return publishes this branch's final Handoff to its parent and seals it; not from
  the root, not while a child is unreturned.
- A message `[control: suggest]`, `[control: checkpoint]`, `[control: return]` or
  `[control: fork handoff node_N]` is the person's order: answer it with that one tool call.
- Nothing you do wakes another branch; the parent reads a return on its own next turn."""


def _handoff_line(node: ThinkingNode, text: str) -> str:
    body = text.strip() or "(none)"
    return f"#### {node.public_id} “{node.title}” ({node.state})\n{body}"


def render(snapshot: Snapshot, node: ThinkingNode) -> str:
    """The node's prompt context, from the space as read."""
    parts = [
        f"## Thinking space {snapshot.space.public_id} (revision {snapshot.space.revision})",
        f"You are branch {node.public_id} “{node.title}”, depth {node.depth}, state "
        f"{node.state}" + (" (root)" if node.parent_id is None else "") + ".",
    ]
    if node.state == NodeState.RETURNED:
        parts.append("This branch is returned and sealed: it is read-only now.")
    if node.parent_id is not None:
        parts.append(
            "### Your inherited Handoff (from your parent, immutable)\n"
            + (node.inherited_handoff.strip() or "(none: your parent's conversation was empty)")
        )
    siblings = snapshot.siblings(node)
    if siblings:
        lines = []
        for sibling in siblings:
            published = (
                sibling.returned_handoff
                if sibling.state == NodeState.RETURNED
                else sibling.checkpoint_handoff
            )
            lines.append(_handoff_line(sibling, published))
        parts.append(
            "### Sibling branches (their checkpoint or returned Handoffs)\n" + "\n".join(lines)
        )
    children = snapshot.children(node)
    if children:
        lines = [
            _handoff_line(child, child.returned_handoff)
            if child.state == NodeState.RETURNED
            else f"#### {child.public_id} “{child.title}” ({child.state})\n(not returned yet)"
            for child in children
        ]
        parts.append("### Your child branches (their returned Handoffs)\n" + "\n".join(lines))
    parts.append(RULES)
    return "\n\n".join(parts)


class SpaceAccess:
    """Implements engines.capabilities.SpaceContext for one node's chat process."""

    def __init__(self, process_id: int) -> None:
        self._process_id = process_id

    def render(self) -> str:
        node = node_of_process(self._process_id)
        if node is None:
            return ""
        snapshot = load(node.space_id)
        return render(snapshot, snapshot.node(node.pk))


def space_for(process_id: int, engine_params: dict[str, object]) -> SpaceAccess | None:
    return SpaceAccess(process_id) if engine_params.get(NODE_MARKER) else None


def set_context_space(sender: Any, process: Any, ctx: Any, **kwargs: Any) -> None:
    """A turn's context is built (processes.signals.context_built): its `ctx.space`, None
    outside a thinking space."""
    ctx.space = space_for(process.pk, process.engine_params)
