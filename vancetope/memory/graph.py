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

from vancetope.errors import BadRequest, NotFound
from vancetope.ids import parse_public_id
from vancetope.memory.models import (
    DocumentChunk,
    EdgeAuthor,
    EdgeType,
    KnowledgeEdge,
    MemoryItem,
    Passage,
)
from vancetope.memory.scopes import Reach

MAX_REASONING = 4_000


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
    if type not in EdgeType.values:
        raise BadRequest(f"type must be one of {', '.join(EdgeType.values)}", error="type")
    if not 0.0 <= confidence <= 1.0:
        raise BadRequest("confidence must be between 0 and 1", error="confidence")
    if source.id == target.id:
        raise BadRequest("an edge joins two different nodes", error="toId")
    if source.tenant_id != target.tenant_id:
        raise BadRequest("an edge joins two nodes of one tenant", error="toId")
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
            return existing
        return KnowledgeEdge.objects.create(
            tenant_id=source.tenant_id,
            type=type,
            confidence=confidence,
            reasoning=reasoning[:MAX_REASONING],
            created_by_kind=author.kind,
            created_by_id=author.id,
            **ends,
        )


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
    if node.item is not None:
        at = Q(from_item=node.item) | Q(to_item=node.item)
    else:
        at = Q(from_chunk=node.chunk) | Q(to_chunk=node.chunk)
    return visible_edges(reach, include_invalid=include_invalid).filter(at)
