"""REST bodies of memory items and documents (PROTOCOL's memory item), as pydantic models."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from vancetope.api import Body, Page
from vancetope.memory.models import Document, MemoryItem, Scope


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
