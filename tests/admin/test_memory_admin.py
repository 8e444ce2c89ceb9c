"""The memory admin: knowledge edges listed, filtered, searched, read-only, invalidated by an
action (never deleted); documents with their chunk counts, chunks inline, deleted whole."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.support.tenancy import Tenancy
from vancetope.memory import graph
from vancetope.memory.models import (
    Document,
    DocumentChunk,
    EdgeAuthor,
    EdgeType,
    KnowledgeEdge,
    Passage,
)
from vancetope.memory.scopes import person_reach

pytestmark = pytest.mark.django_db(transaction=True)

EDGES = "/admin/memory/knowledgeedge/"


@pytest.fixture
def world(alice: Tenancy) -> dict[str, Any]:
    api = alice.api()
    item = api.post(
        "/api/memory",
        {"scope": "project", "scopeId": alice.project_id, "content": "Leave is 28 days."},
        format="json",
    ).json()["id"]
    document = api.post(
        "/api/documents",
        {"project": alice.project_id, "title": "Handbook", "content": "# Leave\n\n28 days."},
        format="json",
    ).json()["id"]
    reach = person_reach(alice.user)
    chunk = graph.get_visible_node(reach, f"{document}:0")
    memory = graph.get_visible_node(reach, item)
    supports = graph.add_edge(
        EdgeType.SUPPORTS,
        chunk,
        memory,
        0.9,
        "the handbook states the leave",
        graph.Author(EdgeAuthor.LINKER, "run_4"),
    )
    mentions = graph.add_edge(
        EdgeType.MENTIONS, memory, chunk, 0.5, "names leave", graph.Author(EdgeAuthor.USER, "amy")
    )
    return {"supports": supports, "mentions": mentions, "document": document}


def listed(operator: Client, query: dict[str, str] | None = None) -> set[str]:
    answer = operator.get(EDGES, query or {})
    assert answer.status_code == 200
    return {str(edge) for edge in answer.context["cl"].result_list}


def test_edges_are_listed_filtered_and_searched(operator: Client, world):
    supports, mentions = str(world["supports"]), str(world["mentions"])
    assert listed(operator) == {supports, mentions}
    assert listed(operator, {"type__exact": "mentions"}) == {mentions}
    assert listed(operator, {"created_by_kind__exact": "linker"}) == {supports}
    assert listed(operator, {"q": "handbook"}) == {supports}
    assert listed(operator, {"valid": "no"}) == set()
    page = operator.get(EDGES).content.decode()
    assert "run_4" in page
    assert "Invalidate the selected edges" in page


def test_an_edges_page_shows_its_provenance_read_only(operator: Client, world):
    edge = world["supports"]
    answer = operator.get(f"{EDGES}{edge.pk}/change/")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "run_4" in page
    assert edge.from_id in page
    assert "the handbook states the leave" in page
    assert answer.context["adminform"].form.fields == {}  # nothing to edit
    assert operator.get(f"{EDGES}add/").status_code == 403
    assert operator.get(f"{EDGES}{edge.pk}/delete/").status_code == 403


def test_the_invalidate_action_keeps_the_rows(operator: Client, world):
    # given: one edge already invalid
    graph.invalidate_edge(world["mentions"], "earlier")
    # when
    answer = operator.post(
        EDGES,
        {
            "action": "invalidate",
            "_selected_action": [world["supports"].pk, world["mentions"].pk],
        },
        follow=True,
    )
    # then
    assert answer.status_code == 200
    assert "1 edges invalidated; 1 already invalid" in answer.content.decode()
    supports = KnowledgeEdge.objects.get(pk=world["supports"].pk)
    assert supports.valid_to is not None
    assert supports.invalidated_reason == "invalidated in the admin by root"
    assert KnowledgeEdge.objects.get(pk=world["mentions"].pk).invalidated_reason == "earlier"
    assert KnowledgeEdge.objects.count() == 2
    assert listed(operator, {"valid": "no"}) == {str(world["supports"]), str(world["mentions"])}


def test_documents_show_their_chunks_and_are_deleted_whole(operator: Client, world):
    document = Document.objects.get()
    changelist = operator.get("/admin/memory/document/")
    assert changelist.status_code == 200
    assert [getattr(row, "chunk_total", None) for row in changelist.context["cl"].result_list] == [
        1
    ]
    page = operator.get(f"/admin/memory/document/{document.pk}/change/")
    assert page.status_code == 200
    assert "28 days." in page.content.decode()
    assert operator.get("/admin/memory/document/add/").status_code == 403
    confirm = operator.get(f"/admin/memory/document/{document.pk}/delete/")
    assert confirm.status_code == 200
    assert "Knowledge edges: 2" in confirm.content.decode()
    # when: deleted with the changelist's action
    answer = operator.post(
        "/admin/memory/document/",
        {"action": "delete_selected", "_selected_action": [document.pk], "post": "yes"},
    )
    # then: its chunks, passages and the edges of its chunks are gone; the item stays
    assert answer.status_code == 302
    assert not Document.objects.exists()
    assert not DocumentChunk.objects.exists()
    assert Passage.objects.filter(chunk__isnull=False).count() == 0
    assert Passage.objects.filter(item__isnull=False).count() == 1
    assert not KnowledgeEdge.objects.exists()
