"""Documents: uploaded as JSON or a multipart file, chunked by headings and paragraphs with
overlap, listed, searched, deleted with their chunks, passages and vectors; in the admin."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.support.memory import embedded
from tests.support.tenancy import Tenancy
from vancetope.memory.documents import chunk_text
from vancetope.memory.models import Document, DocumentChunk, Passage

pytestmark = pytest.mark.django_db(transaction=True)

HANDBOOK = """# Handbook

Welcome to the team.

## Holidays

Everyone has twenty-eight days of paid leave a year.

Unused days expire at the end of March.

## Expenses

Receipts go to the finance inbox within a week.
"""


def test_chunks_follow_headings_and_keep_their_path():
    # when
    pieces = chunk_text(HANDBOOK, limit=1000, overlap=0)
    # then
    assert [piece.heading for piece in pieces] == [
        "Handbook",
        "Handbook > Holidays",
        "Handbook > Expenses",
    ]
    assert pieces[1].text == (
        "Everyone has twenty-eight days of paid leave a year.\n\n"
        "Unused days expire at the end of March."
    )


def test_a_long_section_is_cut_at_paragraphs_with_overlap():
    # given
    paragraphs = [f"Paragraph {i} says something about topic number {i}." for i in range(12)]
    # when
    pieces = chunk_text("\n\n".join(paragraphs), limit=200, overlap=40)
    # then
    assert len(pieces) > 2
    assert all(len(piece.text) <= 200 + 40 for piece in pieces)
    for before, after in zip(pieces, pieces[1:], strict=False):
        overlap = after.text.split("\n\n")[0]
        assert before.text.endswith(overlap)
    joined = " ".join(piece.text for piece in pieces)
    assert all(paragraph in joined for paragraph in paragraphs)


def test_a_json_document_is_chunked_listed_and_found(alice: Tenancy):
    # given
    api = alice.api()
    # when
    answer = api.post(
        "/api/documents",
        {"project": alice.project_id, "title": "Handbook", "content": HANDBOOK},
        format="json",
    )
    embedded()
    # then
    assert answer.status_code == 201, answer.json()
    document = answer.json()
    assert (document["chunks"], document["mediaType"]) == (3, "text/markdown")
    assert api.get("/api/documents").json()["results"] == [document]
    assert api.get(f"/api/documents/{document['id']}").json() == document
    found = api.get("/api/memory/search", {"q": "vacation allowance", "k": "1"}).json()["results"]
    assert (found[0]["documentId"], found[0]["chunk"]) == (document["id"], 1)
    assert found[0]["source"] == {"kind": "document", "id": document["id"]}


def test_a_multipart_file_is_a_document(alice: Tenancy):
    # given
    upload = SimpleUploadedFile("notes.txt", b"The VPN needs a new certificate.", "text/plain")
    # when
    answer = alice.api().post(
        "/api/documents", {"project": alice.project_id, "file": upload}, format="multipart"
    )
    # then
    assert answer.status_code == 201, answer.json()
    assert (answer.json()["title"], answer.json()["mediaType"]) == ("notes.txt", "text/plain")


def test_deleting_a_document_removes_its_chunks_passages_and_search_results(alice: Tenancy):
    # given
    api = alice.api()
    document = api.post(
        "/api/documents",
        {"project": alice.project_id, "title": "Handbook", "content": HANDBOOK},
        format="json",
    ).json()
    embedded()
    # when
    assert api.delete(f"/api/documents/{document['id']}").status_code == 204
    # then
    assert not Document.objects.exists()
    assert not DocumentChunk.objects.exists()
    assert not Passage.objects.exists()
    assert api.get("/api/memory/search", {"q": "paid leave"}).json() == {"results": []}


def test_another_tenant_neither_sees_nor_deletes_a_document(alice: Tenancy, bob: Tenancy):
    # given
    document = (
        alice.api()
        .post(
            "/api/documents",
            {"project": alice.project_id, "title": "Handbook", "content": HANDBOOK},
            format="json",
        )
        .json()
    )
    # when / then
    assert bob.api().get(f"/api/documents/{document['id']}").status_code == 404
    assert bob.api().delete(f"/api/documents/{document['id']}").status_code == 404
    assert bob.api().get("/api/documents").json()["count"] == 0
    assert (
        bob.api()
        .post(
            "/api/documents",
            {"project": alice.project_id, "title": "x", "content": "y"},
            format="json",
        )
        .status_code
        == 404
    )


def test_a_document_without_content_or_of_an_unknown_type_is_refused(alice: Tenancy):
    api = alice.api()
    project = alice.project_id
    assert (
        api.post("/api/documents", {"project": project, "title": "x"}, format="json").status_code
        == 400
    )
    assert (
        api.post(
            "/api/documents",
            {"project": project, "title": "x", "content": "y", "mediaType": "application/pdf"},
            format="json",
        ).status_code
        == 400
    )


def test_documents_and_memory_items_open_in_the_admin(operator, alice: Tenancy):
    # given
    alice.api().post(
        "/api/documents",
        {"project": alice.project_id, "title": "Handbook", "content": HANDBOOK},
        format="json",
    )
    document = Document.objects.get()
    # when / then
    assert operator.get("/admin/memory/document/").status_code == 200
    assert operator.get(f"/admin/memory/document/{document.pk}/change/").status_code == 200
    assert operator.get("/admin/memory/memoryitem/").status_code == 200
    answer = operator.post(f"/admin/memory/document/{document.pk}/delete/", {"post": "yes"})
    assert answer.status_code == 302
    assert not Passage.objects.exists()
