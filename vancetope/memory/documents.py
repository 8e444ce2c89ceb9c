"""Project documents: uploaded, chunked by headings and paragraphs with overlap, searched through
their chunks' passages, deleted with their chunks, passages and vectors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from vancetope.errors import BadRequest, NotFound, TooLarge
from vancetope.ids import parse_public_id
from vancetope.memory.indexing import chunk_passage, index, unindex
from vancetope.memory.models import Document, DocumentChunk, Passage
from vancetope.tenancy.models import Project
from vancetope.tenancy.services import AnyUser, in_visible_projects

MEDIA_TYPES = ("text/markdown", "text/plain")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Piece:
    heading: str
    text: str


def sections(content: str) -> list[tuple[str, list[str]]]:
    """(heading path, paragraphs) in order; a Markdown heading starts a section."""
    path: list[tuple[int, str]] = []
    found: list[tuple[str, list[str]]] = [("", [])]
    paragraph: list[str] = []

    def end_paragraph() -> None:
        if paragraph:
            found[-1][1].append("\n".join(paragraph).strip())
            paragraph.clear()

    for line in content.splitlines():
        match = HEADING.match(line)
        if match:
            end_paragraph()
            level = len(match.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, match[2])]
            found.append((" > ".join(title for _, title in path), []))
        elif not line.strip():
            end_paragraph()
        else:
            paragraph.append(line)
    end_paragraph()
    return [(heading, paras) for heading, paras in found if paras]


def _pieces_of(paragraph: str, limit: int) -> list[str]:
    """A paragraph longer than `limit` split at sentence ends (or hard, if it has none)."""
    if len(paragraph) <= limit:
        return [paragraph]
    out: list[str] = []
    current = ""
    for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
        while len(sentence) > limit:
            out.append(sentence[:limit])
            sentence = sentence[limit:]
        if current and len(current) + 1 + len(sentence) > limit:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        out.append(current)
    return out


def _tail(text: str, overlap: int) -> str:
    if overlap <= 0 or len(text) <= overlap:
        return "" if overlap <= 0 else text
    tail = text[-overlap:]
    space = tail.find(" ")
    return tail[space + 1 :] if 0 <= space < len(tail) - 1 else tail


def chunk_text(content: str, limit: int | None = None, overlap: int | None = None) -> list[Piece]:
    """Chunks of at most about `limit` characters that never cross a heading; paragraphs are
    kept whole where they fit, and each chunk after the first of a section starts with the
    last `overlap` characters (at a word boundary) of the one before."""
    limit = limit or settings.VANCETOPE_CHUNK_CHARS
    overlap = settings.VANCETOPE_CHUNK_OVERLAP if overlap is None else overlap
    pieces: list[Piece] = []
    for heading, paragraphs in sections(content):
        current = ""
        for paragraph in paragraphs:
            for part in _pieces_of(paragraph, limit):
                if current and len(current) + 2 + len(part) > limit:
                    pieces.append(Piece(heading, current))
                    current = _tail(current, overlap)
                current = f"{current}\n\n{part}" if current else part
        if current:
            pieces.append(Piece(heading, current))
    return pieces


def check_document(title: str, content: str, media_type: str) -> None:
    if not title.strip():
        raise BadRequest("title must not be empty", error="title")
    if media_type not in MEDIA_TYPES:
        raise BadRequest(f"mediaType must be one of {', '.join(MEDIA_TYPES)}", error="mediaType")
    if len(content.encode()) > settings.VANCETOPE_DOCUMENT_MAX_BYTES:
        raise TooLarge(f"document is larger than {settings.VANCETOPE_DOCUMENT_MAX_BYTES} bytes")
    if not content.strip():
        raise BadRequest("content must not be empty", error="content")


def create_document(
    project: Project, title: str, content: str, media_type: str, created_by: Any
) -> Document:
    check_document(title, content, media_type)
    with transaction.atomic():
        document = Document.objects.create(
            tenant_id=project.tenant_id,
            project=project,
            title=title[:300],
            media_type=media_type,
            content=content,
            created_by=created_by if created_by and created_by.is_authenticated else None,
        )
        chunks = DocumentChunk.objects.bulk_create(
            DocumentChunk(document=document, index=i, heading=piece.heading[:500], text=piece.text)
            for i, piece in enumerate(chunk_text(content))
        )
        for chunk in chunks:
            chunk.document = document
        index([chunk_passage(chunk) for chunk in chunks])
    return document


def delete_document(document: Document) -> None:
    """The document, its chunks, their passages and their vectors."""
    with transaction.atomic():
        unindex(Passage.objects.filter(chunk__document=document).values_list("pk", flat=True))
        document.delete()


def visible_documents(user: AnyUser, project: str | None = None) -> QuerySet[Document]:
    return in_visible_projects(Document.objects.all(), user, project)


def get_visible_document(user: AnyUser, document_id: str) -> Document:
    pk = parse_public_id("doc", document_id, "document")
    document = visible_documents(user).filter(pk=pk).first()
    if document is None:
        raise NotFound(f"document {document_id!r} not found")
    return document
