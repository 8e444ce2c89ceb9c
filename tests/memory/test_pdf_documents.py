"""PDF documents (the `pdf` extra): a multipart PDF's text read page by page, each page a
section no chunk crosses; a PDF without text, a broken one, or one sent while pypdf is missing
is a 400 naming the file."""

from __future__ import annotations

import io
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.support.memory import embedded
from tests.support.pdf import minimal_pdf
from tests.support.tenancy import Tenancy
from vancetope.memory.models import Document, DocumentChunk

pypdf = pytest.importorskip("pypdf", reason="the PDF tests need the pdf extra (pypdf)")

pytestmark = pytest.mark.django_db(transaction=True)


MANUAL = [
    ["The VPN needs a new certificate.", "Renew it every March."],
    ["Printers on the third floor take badges."],
]


def post_file(tenancy: Tenancy, name: str, raw: bytes, content_type: str) -> dict:
    upload = SimpleUploadedFile(name, raw, content_type)
    answer = tenancy.api().post(
        "/api/documents", {"project": tenancy.project_id, "file": upload}, format="multipart"
    )
    return {"status": answer.status_code, **answer.json()}


def test_the_handwritten_pdf_is_a_real_pdf():
    reader = pypdf.PdfReader(io.BytesIO(minimal_pdf(MANUAL)))
    assert len(reader.pages) == 2
    assert "Renew it every March." in reader.pages[0].extract_text()


def test_a_pdf_becomes_one_section_per_page_and_is_found(alice: Tenancy):
    # when
    answer = post_file(alice, "manual.pdf", minimal_pdf(MANUAL), "application/pdf")
    embedded()
    # then
    assert answer["status"] == 201, answer
    assert (answer["title"], answer["mediaType"], answer["chunks"]) == (
        "manual.pdf",
        "application/pdf",
        2,
    )
    chunks = list(DocumentChunk.objects.order_by("index").values_list("heading", "text"))
    assert chunks == [
        ("Page 1", "The VPN needs a new certificate. Renew it every March."),
        ("Page 2", "Printers on the third floor take badges."),
    ]
    assert "Printers on the third floor" in Document.objects.get().content
    found = alice.api().get("/api/memory/search", {"q": "badge printers", "k": "1"}).json()
    assert (found["results"][0]["documentId"], found["results"][0]["chunk"]) == (
        answer["id"],
        1,
    )


def test_a_pdf_is_known_by_its_name_or_its_content_type(alice: Tenancy):
    by_name = post_file(alice, "manual.PDF", minimal_pdf(MANUAL), "application/octet-stream")
    by_type = post_file(alice, "manual", minimal_pdf(MANUAL), "application/pdf")
    assert (by_name["status"], by_name["mediaType"]) == (201, "application/pdf")
    assert (by_type["status"], by_type["mediaType"]) == (201, "application/pdf")


def test_a_pdf_without_text_is_a_400_saying_so(alice: Tenancy):
    answer = post_file(alice, "scan.pdf", minimal_pdf([[], []]), "application/pdf")
    assert answer["status"] == 400, answer
    assert answer["error"] == "file"
    assert "scan.pdf" in answer["message"]
    assert "no text" in answer["message"]
    assert not Document.objects.exists()


def test_a_broken_pdf_is_a_400_naming_the_file(alice: Tenancy):
    answer = post_file(alice, "broken.pdf", b"%PDF-1.4\nnothing else", "application/pdf")
    assert answer["status"] == 400, answer
    assert answer["error"] == "file"
    assert "broken.pdf" in answer["message"]
    assert not Document.objects.exists()


def test_without_pypdf_a_pdf_is_a_400_naming_the_file_and_the_extra(
    alice: Tenancy, monkeypatch: pytest.MonkeyPatch
):
    # given: pypdf cannot be imported (as without the pdf extra)
    monkeypatch.setitem(sys.modules, "pypdf", None)
    # when
    answer = post_file(alice, "manual.pdf", minimal_pdf(MANUAL), "application/pdf")
    # then
    assert answer["status"] == 400, answer
    assert answer["error"] == "file"
    assert "manual.pdf" in answer["message"]
    assert "vancetope[pdf]" in answer["message"]
    assert not Document.objects.exists()
    # and a text file still is a document
    text = post_file(alice, "notes.md", b"# Notes\n\nPlain words.", "text/markdown")
    assert (text["status"], text["mediaType"]) == (201, "text/markdown")


def test_a_file_that_is_neither_pdf_nor_utf8_is_a_400(alice: Tenancy):
    answer = post_file(alice, "blob.bin", b"\xff\xfe\x00\x81", "application/octet-stream")
    assert answer["status"] == 400, answer
    assert answer["error"] == "file"
    assert "blob.bin" in answer["message"]
