"""REST bodies of memory items, documents and the knowledge graph (PROTOCOL's memory item and
knowledge edge), as pydantic models."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from vancetope.api import Body, Page
from vancetope.memory.graph import Node, node_of_edge
from vancetope.memory.models import (
    Document,
    EdgeAuthor,
    EdgeType,
    KnowledgeEdge,
    MemoryItem,
    Scope,
)
from vancetope.memory.search import snippet


def _at(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


class SourceObject(Body):
    kind: str
    id: str | None


class MemoryItemObject(Body):
    id: str
    scope: Scope
    scopeId: str
    key: str | None
    content: str
    tags: list[str]
    source: SourceObject
    createdAt: str
    validFrom: str
    validTo: str | None
    supersededBy: str | None


class MemoryItemPage(Page[MemoryItemObject]):
    """A page of memory items, newest first."""


class LookupObject(Body):
    """The narrowest visible item of a key, and the scope that answered (none: not found)."""

    key: str
    found: bool
    scope: Scope | None
    item: MemoryItemObject | None


class SearchResultObject(Body):
    itemId: str | None = Field(default=None, exclude_if=lambda value: value is None)
    documentId: str | None = Field(default=None, exclude_if=lambda value: value is None)
    chunk: int | None = Field(default=None, exclude_if=lambda value: value is None)
    title: str | None = Field(default=None, exclude_if=lambda value: value is None)
    scope: Scope
    source: SourceObject
    score: float
    snippet: str
    lexicalRank: int | None
    denseRank: int | None


class SearchResultsObject(Body):
    results: list[SearchResultObject]


class DocumentObject(Body):
    id: str
    projectId: str
    title: str
    mediaType: str
    chunks: int
    bytes: int
    createdAt: str


class DocumentPage(Page[DocumentObject]):
    """A page of documents, newest first."""


def item_data(item: MemoryItem) -> dict[str, Any]:
    data = {
        "id": item.public_id,
        "scope": item.scope,
        "scopeId": item.scope_id,
        "key": item.key or None,
        "content": item.content,
        "tags": item.tags,
        "source": {"kind": item.source_kind, "id": item.source_id or None},
        "createdAt": _at(item.created_at),
        "validFrom": _at(item.valid_from),
        "validTo": _at(item.valid_to),
        "supersededBy": f"mem_{item.superseded_by_id}" if item.superseded_by_id else None,
    }
    return MemoryItemObject.model_validate(data).model_dump(mode="json")


def document_data(document: Document) -> dict[str, Any]:
    data = {
        "id": document.public_id,
        "projectId": document.project.public_id,
        "title": document.title,
        "mediaType": document.media_type,
        "chunks": getattr(document, "chunk_count", None) or document.chunks.count(),
        "bytes": len(document.content.encode()),
        "createdAt": _at(document.created_at),
    }
    return DocumentObject.model_validate(data).model_dump(mode="json")


def _absent(value: Any) -> bool:
    return value is None


class EdgeAuthorObject(Body):
    """Who made an edge: a linker run (`runId`), a process (`processId`) or a person (`user`)."""

    kind: EdgeAuthor
    runId: str | None = Field(default=None, exclude_if=_absent)
    processId: str | None = Field(default=None, exclude_if=_absent)
    user: str | None = Field(default=None, exclude_if=_absent)


class KnowledgeEdgeObject(Body):
    id: str
    type: EdgeType
    fromId: str
    toId: str
    confidence: float
    reasoning: str
    createdBy: EdgeAuthorObject
    createdAt: str
    validTo: str | None
    # Why validTo was set (only on an invalid edge).
    invalidatedReason: str | None = Field(default=None, exclude_if=_absent)


class KnowledgeEdgePage(Page[KnowledgeEdgeObject]):
    """A page of knowledge edges, newest first."""


class NodeEndObject(Body):
    """The other end of one of a node's edges, in short."""

    id: str
    kind: Literal["item", "chunk"]
    snippet: str
    title: str | None


class NodeEdgeObject(KnowledgeEdgeObject):
    """One of a node's edges: `direction` out (the node is fromId) or in, and its other end."""

    direction: Literal["out", "in"]
    other: NodeEndObject


class KnowledgeNodeObject(Body):
    """A node of the graph: a memory item (`mem_N`) or a document chunk (`doc_N:K`)."""

    id: str
    kind: Literal["item", "chunk"]
    text: str
    snippet: str
    scope: Scope
    scopeId: str
    # A chunk's document title (and its heading path); an item's key.
    title: str | None
    heading: str | None = Field(default=None, exclude_if=_absent)
    documentId: str | None = Field(default=None, exclude_if=_absent)
    chunk: int | None = Field(default=None, exclude_if=_absent)
    validTo: str | None
    edges: list[NodeEdgeObject]


def _author(edge: KnowledgeEdge) -> dict[str, Any]:
    by = edge.created_by_id or None
    if edge.created_by_kind == EdgeAuthor.LINKER:
        return {"kind": edge.created_by_kind, "runId": by}
    if edge.created_by_kind == EdgeAuthor.PROCESS:
        return {"kind": edge.created_by_kind, "processId": by}
    return {"kind": edge.created_by_kind, "user": by}


def _edge_fields(edge: KnowledgeEdge) -> dict[str, Any]:
    return {
        "id": edge.public_id,
        "type": edge.type,
        "fromId": edge.from_id,
        "toId": edge.to_id,
        "confidence": edge.confidence,
        "reasoning": edge.reasoning,
        "createdBy": _author(edge),
        "createdAt": _at(edge.created_at),
        "validTo": _at(edge.valid_to),
        "invalidatedReason": (edge.invalidated_reason or None) if edge.valid_to else None,
    }


def edge_data(edge: KnowledgeEdge) -> dict[str, Any]:
    return KnowledgeEdgeObject.model_validate(_edge_fields(edge)).model_dump(mode="json")


def _node_fields(node: Node) -> dict[str, Any]:
    if node.item is not None:
        item = node.item
        return {
            "id": node.id,
            "kind": "item",
            "text": item.content,
            "snippet": snippet(item.content),
            "scope": item.scope,
            "scopeId": item.scope_id,
            "title": item.key or None,
            "validTo": _at(item.valid_to),
        }
    chunk = node.chunk
    assert chunk is not None
    document = chunk.document
    return {
        "id": node.id,
        "kind": "chunk",
        "text": chunk.text,
        "snippet": snippet(chunk.text),
        "scope": Scope.PROJECT,
        "scopeId": document.project.public_id,
        "title": document.title,
        "heading": chunk.heading or None,
        "documentId": document.public_id,
        "chunk": chunk.index,
        "validTo": None,
    }


def node_data(node: Node, edges: list[KnowledgeEdge]) -> dict[str, Any]:
    """The node and its edges, each with its other end's snippet."""
    listed = []
    for edge in edges:
        direction = "out" if edge.from_id == node.id else "in"
        other = _node_fields(node_of_edge(edge, "to" if direction == "out" else "from"))
        listed.append(
            {
                **_edge_fields(edge),
                "direction": direction,
                "other": {key: other[key] for key in ("id", "kind", "snippet", "title")},
            }
        )
    data = {**_node_fields(node), "edges": listed}
    return KnowledgeNodeObject.model_validate(data).model_dump(mode="json")
