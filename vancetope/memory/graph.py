"""The knowledge graph: typed edges between memory items and document chunks.

A node is a memory item (`mem_N`) or a document chunk (`doc_N:K`, chunk K of document N). An
edge is visible to a reader when both of its ends are (memory/scopes.py), so a graph read never
shows what the reader could not read. An edge is never deleted by engines or the linker: one
that no longer holds is invalidated (`valid_to`, with the reason), and stays listed with
`validTo` when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.ids import parse_public_id
from vancetope.memory.models import (
    DocumentChunk,
    EdgeAuthor,
    EdgeType,
    KnowledgeEdge,
    MemoryItem,
    Passage,
)
from vancetope.memory.scopes import Reach, check_may_change
from vancetope.tenancy.services import AnyUser, require_project_admin

MAX_REASONING = 4_000
# The ids of nodes (a memory item, a document's chunk) and a list of edge types, as the
# OpenAPI document states them (ECMA-262 and Python read them the same).
NODE_ID_PATTERN = "^(mem_[0-9]{1,18}|doc_[0-9]{1,18}:[0-9]{1,9})$"
EDGE_TYPES_PATTERN = "^({0})(,({0}))*$".format("|".join(EdgeType.values))


@dataclass(frozen=True)
class Node:
    """One end of an edge: exactly one of item, chunk."""

    item: MemoryItem | None = None
    chunk: DocumentChunk | None = None

    @property
    def id(self) -> str:
        if self.item is not None:
            return self.item.public_id
        assert self.chunk is not None
        return f"doc_{self.chunk.document_id}:{self.chunk.index}"

    @property
    def tenant_id(self) -> int:
        if self.item is not None:
            return self.item.tenant_id
        assert self.chunk is not None
        return self.chunk.document.tenant_id


@dataclass(frozen=True)
class Author:
    kind: EdgeAuthor
    id: str = ""


def get_visible_node(reach: Reach, node_id: str, field: str = "node") -> Node:
    """The item or chunk `node_id` names, if the reach sees it (else a 404; a malformed id is
    a 400 naming `field`). Invalid items are nodes too: their edges stay readable."""
    if node_id.startswith("mem_"):
        pk = parse_public_id("mem", node_id, field)
        item = MemoryItem.objects.filter(reach.q(), pk=pk).first()
        if item is None:
            raise NotFound(f"{field} {node_id!r} not found")
        return Node(item=item)
    document, _, index = node_id.partition(":")
    if not document.startswith("doc_") or not index.isdigit():
        raise BadRequest(
            f"{field}: {node_id!r} is neither a memory item (mem_N) nor a document chunk (doc_N:K)",
            error=field,
            field=field,
        )
    document_pk = parse_public_id("doc", document, field)
    passages = Passage.objects.filter(
        reach.q(), chunk__document_id=document_pk, chunk__index=int(index)
    )
    chunk = (
        DocumentChunk.objects.select_related("document")
        .filter(pk__in=passages.values("chunk_id"))
        .first()
    )
    if chunk is None:
        raise NotFound(f"{field} {node_id!r} not found")
    return Node(chunk=chunk)


def add_edge(
    type: EdgeType,
    source: Node,
    target: Node,
    confidence: float,
    reasoning: str,
    author: Author,
) -> KnowledgeEdge:
    """A new edge from `source` to `target`; an edge of that type between them that is still
    valid is answered as it is (adding the same edge twice keeps one)."""
    return put_edge(type, source, target, confidence, reasoning, author)[0]


def put_edge(
    type: EdgeType,
    source: Node,
    target: Node,
    confidence: float,
    reasoning: str,
    author: Author,
) -> tuple[KnowledgeEdge, bool]:
    """As `add_edge`, and whether the edge is new."""
    if type not in EdgeType.values:
        raise BadRequest(
            f"type must be one of {', '.join(EdgeType.values)}",
            error="type",
            field="type",
        )
    if not 0.0 <= confidence <= 1.0:
        raise BadRequest(
            "confidence must be between 0 and 1", error="confidence", field="confidence"
        )
    if source.id == target.id:
        raise BadRequest("an edge joins two different nodes", error="toId", field="toId")
    if source.tenant_id != target.tenant_id:
        raise BadRequest("an edge joins two nodes of one tenant", error="toId", field="toId")
    ends = {
        "from_item": source.item,
        "from_chunk": source.chunk,
        "to_item": target.item,
        "to_chunk": target.chunk,
    }
    with transaction.atomic():
        existing = (
            KnowledgeEdge.objects.select_for_update()
            .filter(type=type, valid_to__isnull=True, **ends)
            .first()
        )
        if existing is not None:
            return existing, False
        edge = KnowledgeEdge.objects.create(
            tenant_id=source.tenant_id,
            type=type,
            confidence=confidence,
            reasoning=reasoning[:MAX_REASONING],
            created_by_kind=author.kind,
            created_by_id=author.id,
            **ends,
        )
        return edge, True


def invalidate_edge(edge: KnowledgeEdge, reason: str) -> KnowledgeEdge:
    """End the edge's validity (it keeps its row); an invalid edge stays as it is."""
    now = timezone.now()
    changed = KnowledgeEdge.objects.filter(pk=edge.pk, valid_to__isnull=True).update(
        valid_to=now, invalidated_reason=reason[:200]
    )
    if changed:
        edge.valid_to, edge.invalidated_reason = now, reason[:200]
    return edge


def visible_edges(reach: Reach, *, include_invalid: bool = False) -> QuerySet[KnowledgeEdge]:
    """The edges both of whose ends the reach sees."""
    items = MemoryItem.objects.filter(reach.q()).values("pk")
    chunks = Passage.objects.filter(reach.q(), chunk__isnull=False).values("chunk_id")
    ends_seen = (Q(from_item__in=items) | Q(from_chunk__in=chunks)) & (
        Q(to_item__in=items) | Q(to_chunk__in=chunks)
    )
    rows = KnowledgeEdge.objects.filter(ends_seen).select_related("from_chunk", "to_chunk")
    return rows if include_invalid else rows.filter(valid_to__isnull=True)


def edges_of(reach: Reach, node: Node, *, include_invalid: bool = False) -> QuerySet[KnowledgeEdge]:
    """The visible edges that start or end at `node`."""
    return visible_edges(reach, include_invalid=include_invalid).filter(_at(node))


def _at(node: Node) -> Q:
    if node.item is not None:
        return Q(from_item=node.item) | Q(to_item=node.item)
    return Q(from_chunk=node.chunk) | Q(to_chunk=node.chunk)


# --- what REST and the web UI read and do ---------------------------------------------------------

BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def parse_flag(value: str | None, field: str) -> bool:
    """A true/false query parameter (absent: false); anything else, an empty value too, is a
    400 naming it."""
    if value is None:
        return False
    if value.lower() not in BOOLEANS:
        raise BadRequest(f"{field} must be true or false, not {value!r}", error=field, field=field)
    return BOOLEANS[value.lower()]


def filtered_edges(
    reach: Reach,
    *,
    types: str | None = None,
    node: str | None = None,
    created_by: str | None = None,
    include_invalid: bool = False,
) -> QuerySet[KnowledgeEdge]:
    """The visible edges a list asks for: `types` one type or several (comma-separated),
    `node` the edges at one node, `created_by` one author kind; each bad value (an empty one
    too) a 400 naming its filter, a node the reach does not see a 404."""
    rows = visible_edges(reach, include_invalid=include_invalid)
    if types is not None:
        wanted = [part.strip() for part in types.split(",") if part.strip()]
        unknown = [part for part in wanted if part not in EdgeType.values]
        if unknown or not wanted:
            raise BadRequest(
                f"type must be one or more of {', '.join(EdgeType.values)}, not {types!r}",
                error="type",
                field="type",
            )
        rows = rows.filter(type__in=wanted)
    if node is not None:
        rows = rows.filter(_at(get_visible_node(reach, node)))
    if created_by is not None:
        if created_by not in EdgeAuthor.values:
            raise BadRequest(
                f"createdBy must be one of {', '.join(EdgeAuthor.values)}, not {created_by!r}",
                error="createdBy",
                field="createdBy",
            )
        rows = rows.filter(created_by_kind=created_by)
    return rows.select_related("from_item", "to_item", "from_chunk__document", "to_chunk__document")


def get_visible_edge(reach: Reach, edge_id: str) -> KnowledgeEdge:
    """The edge (valid or not) if the reach sees both of its ends, else a 404."""
    pk = parse_public_id("edge", edge_id, "edge")
    edge = visible_edges(reach, include_invalid=True).filter(pk=pk).first()
    if edge is None:
        raise NotFound(f"edge {edge_id!r} not found")
    return edge


def check_may_write(writer: AnyUser, *nodes: Node) -> None:
    """A person writes an edge (links it, invalidates it) only where they may change both of
    its ends, as for memory itself: an item as check_may_change says (their own session's, a
    project's as its admin, a group's or tenant's as a tenant admin), a document's chunk as
    its project's admin. Members read the graph (a 403 changes nothing)."""
    for node in nodes:
        if node.item is not None:
            check_may_change(writer, node.item)
        else:
            assert node.chunk is not None
            project = node.chunk.document.project
            require_project_admin(writer, project, "link its documents in the knowledge graph")


def link_nodes(
    reach: Reach,
    writer: AnyUser,
    type: str,
    from_id: str,
    to_id: str,
    confidence: float,
    reasoning: str,
    author: Author,
) -> tuple[KnowledgeEdge, bool]:
    """A person's edge between two nodes the reach sees and they may write (check_may_write),
    and whether it is new (the same valid edge is answered as it is)."""
    if type not in EdgeType.values:
        raise BadRequest(
            f"type must be one of {', '.join(EdgeType.values)}",
            error="type",
            field="type",
        )
    source = get_visible_node(reach, from_id, "fromId")
    target = get_visible_node(reach, to_id, "toId")
    check_may_write(writer, source, target)
    return put_edge(EdgeType(type), source, target, confidence, reasoning, author)


def invalidate_visible_edge(edge: KnowledgeEdge, writer: AnyUser, reason: str) -> KnowledgeEdge:
    """A person's invalidation, where they may write (check_may_write): an edge already
    invalid is a 409 and stays as it was."""
    check_may_write(writer, node_of_edge(edge, "from"), node_of_edge(edge, "to"))
    if edge.valid_to is not None:
        raise Conflict(f"{edge.public_id} is already invalid since {edge.valid_to.isoformat()}")
    invalidate_edge(edge, reason)
    if edge.valid_to is None:  # another invalidation came first
        raise Conflict(f"{edge.public_id} is already invalid")
    return edge


def node_of_edge(edge: KnowledgeEdge, end: str) -> Node:
    """`end` "from" or "to" of the edge, as a Node."""
    item = getattr(edge, f"{end}_item")
    return Node(item=item) if item is not None else Node(chunk=getattr(edge, f"{end}_chunk"))
