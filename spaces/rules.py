"""The pure checks of every space mutation, run before anything is written or started.

Each takes the space as it was read (its nodes) and the request, and raises BadRequest (a limit:
title, depth, fan-out, Handoff size, the suggestion batch's size) or Conflict (a state that
forbids it: a sealed or returning node, a return that is not eligible, a stale revision).
Nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from spaces.models import SPACE_VERSION, NodeState, ThinkingNode
from vancetope.errors import BadRequest, Conflict

SUGGEST_MIN, SUGGEST_MAX = 2, 4


@dataclass(frozen=True)
class Limits:
    title_chars: int
    depth: int
    children: int
    handoff_chars: int

    @classmethod
    def configured(cls) -> Limits:
        return cls(
            title_chars=settings.VANCETOPE_SPACE_MAX_TITLE_CHARS,
            depth=settings.VANCETOPE_SPACE_MAX_DEPTH,
            children=settings.VANCETOPE_SPACE_MAX_CHILDREN,
            handoff_chars=settings.VANCETOPE_SPACE_MAX_HANDOFF_CHARS,
        )


class StaleRevision(Conflict):
    """The space moved on since it was read: nothing was written."""

    def __init__(self, space: str, read: int, now: int | None = None) -> None:
        now_text = f" (it is at {now})" if now is not None else ""
        super().__init__(f"space {space} is no longer at revision {read}{now_text}", error="stale")


def check_version(version: int, space: str) -> None:
    if version != SPACE_VERSION:
        raise Conflict(
            f"space {space} has version {version}; this Brain knows version {SPACE_VERSION} "
            "only and does not guess",
            error="unknown-version",
        )


def check_title(title: str, limits: Limits, field: str = "title") -> str:
    cleaned = title.strip()
    if not cleaned:
        raise _bad(field, "a title must not be empty")
    if len(cleaned) > limits.title_chars:
        raise _bad(field, f"a title has at most {limits.title_chars} characters")
    return cleaned


def check_handoff(text: str, limits: Limits, field: str = "handoff") -> str:
    cleaned = text.strip()
    if not cleaned:
        raise _bad(field, "a Handoff must not be empty")
    if len(cleaned) > limits.handoff_chars:
        raise _bad(
            field, f"a Handoff has at most {limits.handoff_chars} characters ({len(cleaned)} given)"
        )
    return cleaned


def check_open(node: ThinkingNode, doing: str) -> None:
    """Returned nodes are sealed; a returning node takes no split, rename or checkpoint."""
    if node.state == NodeState.RETURNED:
        raise Conflict(f"cannot {doing} {node.public_id}: it is returned (sealed)")
    if node.state == NodeState.RETURNING:
        raise Conflict(f"cannot {doing} {node.public_id}: it is returning")


def children_of(nodes: Sequence[ThinkingNode], node: ThinkingNode) -> list[ThinkingNode]:
    return [child for child in nodes if child.parent_id == node.pk]


def check_split(
    nodes: Sequence[ThinkingNode], parent: ThinkingNode, count: int, limits: Limits
) -> None:
    check_open(parent, "split")
    if parent.state == NodeState.FORK_PENDING:
        raise Conflict(f"cannot split {parent.public_id}: it waits for its fork Handoff")
    if parent.depth + 1 > limits.depth:
        raise Conflict(f"cannot split {parent.public_id}: a space is at most {limits.depth} deep")
    if len(children_of(nodes, parent)) + count > limits.children:
        raise Conflict(
            f"cannot split {parent.public_id}: a node has at most {limits.children} children"
        )


def check_suggest(nodes: Sequence[ThinkingNode], root: ThinkingNode, count: int) -> None:
    if not SUGGEST_MIN <= count <= SUGGEST_MAX:
        raise _bad("children", f"suggest {SUGGEST_MIN} to {SUGGEST_MAX} children (prefer four)")
    if children_of(nodes, root):
        raise Conflict(
            f"cannot suggest: the root {root.public_id} already has children; split instead"
        )


def check_fork_pending(node: ThinkingNode) -> None:
    if node.state != NodeState.FORK_PENDING:
        raise Conflict(f"{node.public_id} does not wait for a fork Handoff (it is {node.state})")


def check_checkpoint(node: ThinkingNode) -> None:
    check_open(node, "checkpoint")
    if node.state == NodeState.FORK_PENDING:
        raise Conflict(f"cannot checkpoint {node.public_id}: it waits for its fork Handoff")


def check_return(
    nodes: Sequence[ThinkingNode],
    node: ThinkingNode,
    *,
    empty: bool,
    running: bool,
    by_agent: bool = False,
) -> None:
    """Return eligibility: a non-root node whose conversation has begun, not running (a human's
    return starts a control turn of an idle agent), none of whose direct children is
    unreturned. The node's own agent returns it from its control turn too (`returning`)."""
    if node.parent_id is None:
        raise Conflict(f"cannot return {node.public_id}: the root does not return")
    if node.state == NodeState.RETURNED:
        raise Conflict(f"cannot return {node.public_id}: it is returned already (sealed)")
    if node.state == NodeState.RETURNING and not by_agent:
        raise Conflict(f"cannot return {node.public_id}: it is returning already")
    if node.state == NodeState.FORK_PENDING or empty:
        raise Conflict(f"cannot return {node.public_id}: the branch is empty")
    if running:
        raise Conflict(f"cannot return {node.public_id}: its agent is running; wait for it")
    open_children = [c for c in children_of(nodes, node) if c.state != NodeState.RETURNED]
    if open_children:
        names = ", ".join(child.public_id for child in open_children)
        raise Conflict(f"cannot return {node.public_id}: direct children unreturned: {names}")


def _bad(field: str, message: str) -> BadRequest:
    return BadRequest(f"{field}: {message}", error="invalid", field=field)
