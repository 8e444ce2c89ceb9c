"""Reading a space whole, and running a mutation on it: read, check, compare-and-swap.

`mutate` reads the space, lets `build` check the request against it (spaces/rules.py) and say
what to write, and commits that at the revision it read (spaces/transitions.py). A caller that
names the revision it saw (a person's frame) is refused if the space moved on; a caller that
does not (an agent's tool, the end of a turn) is re-checked against the newer space and tried
again, so a refusal always reflects the space as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spaces import rules
from spaces.models import NODE_ORDER, ThinkingNode, ThinkingSpace
from spaces.rules import StaleRevision
from spaces.transitions import Mutation, commit
from vancetope.errors import Conflict, NotFound

# How often a mutation without a named revision is re-checked after losing a race.
ATTEMPTS = 20


@dataclass
class Snapshot:
    space: ThinkingSpace
    nodes: list[ThinkingNode]

    def node(self, pk: int) -> ThinkingNode:
        for node in self.nodes:
            if node.pk == pk:
                return node
        raise NotFound(f"node node_{pk} not found in {self.space.public_id}")

    @property
    def root(self) -> ThinkingNode:
        assert self.space.root_node_id is not None
        return self.node(self.space.root_node_id)

    def children(self, node: ThinkingNode) -> list[ThinkingNode]:
        return rules.children_of(self.nodes, node)

    def siblings(self, node: ThinkingNode) -> list[ThinkingNode]:
        if node.parent_id is None:
            return []
        return [n for n in self.nodes if n.parent_id == node.parent_id and n.pk != node.pk]


def load(space_pk: int) -> Snapshot:
    space = ThinkingSpace.objects.select_related("project").filter(pk=space_pk).first()
    if space is None:
        raise NotFound(f"space spc_{space_pk} not found")
    rules.check_version(space.version, space.public_id)
    nodes = list(ThinkingNode.objects.filter(space_id=space_pk).order_by(*NODE_ORDER))
    return Snapshot(space, nodes)


def mutate(
    space_pk: int,
    build: Callable[[Snapshot], Mutation | None],
    *,
    revision: int | None = None,
) -> Snapshot:
    """Check and write one mutation (`build` may say None: nothing to do); the space as it is
    after it."""
    for _ in range(ATTEMPTS):
        snapshot = load(space_pk)
        if revision is not None and snapshot.space.revision != revision:
            raise StaleRevision(snapshot.space.public_id, revision, snapshot.space.revision)
        mutation = build(snapshot)
        if mutation is None:
            return snapshot  # nothing to change: nothing written, the revision stays
        try:
            commit(snapshot.space, mutation)
        except StaleRevision:
            if revision is not None:
                raise
            continue
        return load(space_pk)
    raise Conflict(f"space spc_{space_pk} changed too often meanwhile; try again", error="stale")


def node_of_process(process_id: int) -> ThinkingNode | None:
    return ThinkingNode.objects.filter(chat_process_id=process_id).first()


def node_by_public_id(user: Any, node_id: str) -> ThinkingNode:
    """A node of a space the user owns, or a 404 (another tenant's id included)."""
    from vancetope.ids import parse_public_id

    pk = parse_public_id("node", node_id, "node")
    node = ThinkingNode.objects.filter(pk=pk, space__owner_id=user.pk).first()
    if node is None:
        raise NotFound(f"node {node_id!r} not found")
    return node


def visible_spaces(user: Any) -> Any:
    if not user.is_authenticated:
        return ThinkingSpace.objects.none()
    return ThinkingSpace.objects.filter(owner_id=user.pk).select_related("project")


def space_by_public_id(user: Any, space_id: str) -> ThinkingSpace:
    from vancetope.ids import parse_public_id

    pk = parse_public_id("spc", space_id, "space")
    space = visible_spaces(user).filter(pk=pk).first()
    if space is None:
        raise NotFound(f"space {space_id!r} not found")
    return space
