"""Project documents: uploaded (JSON text, or a multipart text, Markdown or PDF file), chunked by
headings and paragraphs with overlap, searched through their chunks' passages, deleted with
their chunks, passages and vectors.

A PDF's text is read page by page with pypdf (the `pdf` extra); its headings are unknown, so
each page is a section ("Page 3") that no chunk crosses."""

from __future__ import annotations

import io
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

PDF = "application/pdf"
MEDIA_TYPES = ("text/markdown", "text/plain", PDF)
PDF_EXTRA = "pip install 'vancetope[pdf]'"
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
    return chunk_sections(sections(content), limit, overlap)


def chunk_sections(
    found: list[tuple[str, list[str]]], limit: int | None = None, overlap: int | None = None
) -> list[Piece]:
    """chunk_text's cutting of (heading path, paragraphs) sections."""
    limit = limit or settings.VANCETOPE_CHUNK_CHARS
    overlap = settings.VANCETOPE_CHUNK_OVERLAP if overlap is None else overlap
    pieces: list[Piece] = []
    for heading, paragraphs in found:
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
        raise BadRequest("title must not be empty", error="title", field="title")
    if media_type not in MEDIA_TYPES:
        raise BadRequest(
            f"mediaType must be one of {', '.join(MEDIA_TYPES)}",
            error="mediaType",
            field="mediaType",
        )
    if len(content.encode()) > settings.VANCETOPE_DOCUMENT_MAX_BYTES:
        raise TooLarge(f"document is larger than {settings.VANCETOPE_DOCUMENT_MAX_BYTES} bytes")
    if not content.strip():
        raise BadRequest("content must not be empty", error="content", field="content")


def page_sections(pages: list[str]) -> list[tuple[str, list[str]]]:
    """A PDF's pages as sections "Page N", their paragraphs split at blank lines."""
    found = []
    for number, text in enumerate(pages, start=1):
        paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", text)]
        if kept := [paragraph for paragraph in paragraphs if paragraph]:
            found.append((f"Page {number}", kept))
    return found


def is_pdf(name: str, content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == PDF or name.lower().endswith(
        ".pdf"
    )


def pdf_pages(raw: bytes, name: str) -> list[str]:
    """The text of each page of the PDF file `name`; a 400 naming the file when pypdf (the
    `pdf` extra) is missing, the file is no readable PDF, or it has no text."""
    try:
        import pypdf
    except ImportError:
        raise BadRequest(
            f"file {name!r} is a PDF; reading PDFs needs the pdf extra ({PDF_EXTRA})",
            error="file",
            field="file",
        ) from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(raw))
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # pypdf raises many kinds on a broken file
        raise BadRequest(
            f"file {name!r} is not a readable PDF: {exc}", error="file", field="file"
        ) from None
    if not any(text.strip() for text in pages):
        raise BadRequest(
            f"file {name!r} has no text to read (a scanned PDF holds only images)",
            error="file",
            field="file",
        )
    return pages


def create_uploaded_document(
    project: Project,
    title: str,
    media_type: str,
    name: str,
    content_type: str | None,
    raw: bytes,
    created_by: Any,
) -> Document:
    """A document from a multipart file: a PDF (by its Content-Type or a .pdf name) read page
    by page, else UTF-8 text (a .txt name is plain text)."""
    if len(raw) > settings.VANCETOPE_DOCUMENT_MAX_BYTES:
        raise TooLarge(f"file is larger than {settings.VANCETOPE_DOCUMENT_MAX_BYTES} bytes")
    title = title or name
    if is_pdf(name, content_type):
        pages = pdf_pages(raw, name)
        content = "\n\n".join(text.strip() for text in pages if text.strip())
        return create_document(project, title, content, PDF, created_by, found=page_sections(pages))
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(f"file {name!r} is not UTF-8 text", error="file", field="file") from None
    if name.lower().endswith((".txt", ".text")):
        media_type = "text/plain"
    return create_document(project, title, content, media_type, created_by)


def create_document(
    project: Project,
    title: str,
    content: str,
    media_type: str,
    created_by: Any,
    *,
    found: list[tuple[str, list[str]]] | None = None,
) -> Document:
    """`found`: the sections when they are not Markdown's (a PDF's pages)."""
    check_document(title, content, media_type)
    if media_type == PDF and found is None:
        raise BadRequest(
            "a PDF is uploaded as a multipart file", error="mediaType", field="mediaType"
        )
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
            for i, piece in enumerate(
                chunk_text(content) if found is None else chunk_sections(found)
            )
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
