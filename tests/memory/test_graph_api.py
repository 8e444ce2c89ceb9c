"""The knowledge graph over REST: edges listed with filters and pages, a node with its edges
and their other ends, a person's own edge, invalidation that keeps the row; another tenant's
node or edge is a 404, a bad filter or body a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.tenancy import Tenancy
from vancetope.memory import graph
from vancetope.memory.models import EdgeAuthor, EdgeType, KnowledgeEdge
from vancetope.memory.scopes import person_reach

pytestmark = pytest.mark.django_db(transaction=True)

HANDBOOK = """# Handbook

## Holidays

Everyone has twenty-eight days of paid leave a year.

## Expenses

Receipts go to the finance inbox within a week.
"""


def write(tenancy: Tenancy, content: str, key: str = "") -> str:
    answer = tenancy.api().post(
        "/api/memory",
        {"scope": "project", "scopeId": tenancy.project_id, "key": key, "content": content},
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    return str(answer.json()["id"])


def upload(tenancy: Tenancy) -> str:
    answer = tenancy.api().post(
        "/api/documents",
        {"project": tenancy.project_id, "title": "Handbook", "content": HANDBOOK},
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    return str(answer.json()["id"])


def link(
    tenancy: Tenancy,
    type: EdgeType,
    from_id: str,
    to_id: str,
    author: graph.Author | None = None,
    confidence: float = 0.8,
) -> KnowledgeEdge:
    reach = person_reach(tenancy.user)
    return graph.add_edge(
        type,
        graph.get_visible_node(reach, from_id),
        graph.get_visible_node(reach, to_id),
        confidence,
        f"{from_id} {type} {to_id}",
        author or graph.Author(EdgeAuthor.LINKER, "run_7"),
    )


@pytest.fixture
def world(alice: Tenancy) -> dict[str, Any]:
    """Two items and a document's two chunks of alice, joined by four edges of four types."""
    leave = write(alice, "We get 28 days of leave.", key="leave")
    receipts = write(alice, "Receipts are due in a week.")
    document = upload(alice)
    holidays, expenses = f"{document}:0", f"{document}:1"
    edges = {
        "supports": link(alice, EdgeType.SUPPORTS, holidays, leave),
        "mentions": link(alice, EdgeType.MENTIONS, expenses, receipts),
        "derived_from": link(
            alice,
            EdgeType.DERIVED_FROM,
            receipts,
            expenses,
            graph.Author(EdgeAuthor.PROCESS, "tp_3"),
        ),
        "contradicts": link(
            alice, EdgeType.CONTRADICTS, leave, receipts, graph.Author(EdgeAuthor.USER, "carol")
        ),
    }
    return {
        "leave": leave,
        "receipts": receipts,
        "document": document,
        "holidays": holidays,
        "expenses": expenses,
        "edges": edges,
    }


def test_the_edges_are_listed_newest_first_in_protocol_shape(alice: Tenancy, world):
    # when
    answer = alice.api().get("/api/knowledge/edges")
    # then
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["count"] == 4
    assert [edge["type"] for edge in body["results"]] == [
        "contradicts",
        "derived_from",
        "mentions",
        "supports",
    ]
    supports = body["results"][-1]
    assert supports == {
        "id": world["edges"]["supports"].public_id,
        "type": "supports",
        "fromId": world["holidays"],
        "toId": world["leave"],
        "confidence": 0.8,
        "reasoning": f"{world['holidays']} supports {world['leave']}",
        "createdBy": {"kind": "linker", "runId": "run_7"},
        "createdAt": supports["createdAt"],
        "validTo": None,
    }
    assert supports["createdAt"].endswith("Z")
    authors = {edge["type"]: edge["createdBy"] for edge in body["results"]}
    assert authors["derived_from"] == {"kind": "process", "processId": "tp_3"}
    assert authors["contradicts"] == {"kind": "user", "user": "carol"}


def test_the_filters_narrow_the_list(alice: Tenancy, world):
    api = alice.api()

    def types(**query: str) -> set[str]:
        answer = api.get("/api/knowledge/edges", query)
        assert answer.status_code == 200, answer.json()
        return {edge["type"] for edge in answer.json()["results"]}

    assert types(type="mentions") == {"mentions"}
    assert types(type="supports,contradicts") == {"supports", "contradicts"}
    assert types(node=world["receipts"]) == {"mentions", "derived_from", "contradicts"}
    assert types(node=world["holidays"]) == {"supports"}
    assert types(createdBy="linker") == {"supports", "mentions"}
    assert types(createdBy="process") == {"derived_from"}
    assert types(node=world["receipts"], createdBy="user") == {"contradicts"}
    assert types(project=alice.project_id, type="derived_from") == {"derived_from"}


def test_the_list_is_paginated(alice: Tenancy, world):
    # when
    first = alice.api().get("/api/knowledge/edges", {"limit": "3"}).json()
    second = alice.api().get("/api/knowledge/edges", {"limit": "3", "offset": "3"}).json()
    # then
    assert (first["count"], len(first["results"]), len(second["results"])) == (4, 3, 1)
    assert first["next"] is not None
    assert first["previous"] is None
    assert second["next"] is None
    ids = {edge["id"] for edge in first["results"] + second["results"]}
    assert ids == {edge.public_id for edge in world["edges"].values()}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"type": "likes"}, "type"),
        ({"type": "supports,likes"}, "type"),
        ({"createdBy": "robot"}, "createdBy"),
        ({"includeInvalid": "maybe"}, "includeInvalid"),
        ({"node": "item_3"}, "node"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(alice: Tenancy, world, query, field):
    # when
    answer = alice.api().get("/api/knowledge/edges", query)
    # then
    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"] == field
    assert field in answer.json()["message"]


def test_a_bad_page_is_a_400(alice: Tenancy, world):
    answer = alice.api().get("/api/knowledge/edges", {"limit": "many"})
    assert answer.status_code == 400
    assert "limit" in answer.json()["message"]


def test_a_node_shows_its_text_and_its_edges_with_the_other_ends(alice: Tenancy, world):
    # when
    answer = alice.api().get(f"/api/knowledge/nodes/{world['receipts']}")
    chunk = alice.api().get(f"/api/knowledge/nodes/{world['expenses']}")
    # then
    assert answer.status_code == 200, answer.json()
    node = answer.json()
    assert (node["id"], node["kind"], node["text"]) == (
        world["receipts"],
        "item",
        "Receipts are due in a week.",
    )
    assert (node["scope"], node["scopeId"], node["title"], node["validTo"]) == (
        "project",
        alice.project_id,
        None,
        None,
    )
    edges = {edge["type"]: edge for edge in node["edges"]}
    assert set(edges) == {"mentions", "derived_from", "contradicts"}
    assert edges["mentions"]["direction"] == "in"
    assert edges["mentions"]["other"] == {
        "id": world["expenses"],
        "kind": "chunk",
        "snippet": "Receipts go to the finance inbox within a week.",
        "title": "Handbook",
    }
    assert edges["contradicts"]["other"]["snippet"] == "We get 28 days of leave."
    assert edges["contradicts"]["other"]["title"] == "leave"
    assert edges["derived_from"]["direction"] == "out"
    assert chunk.status_code == 200, chunk.json()
    assert chunk.json()["kind"] == "chunk"
    assert chunk.json()["title"] == "Handbook"
    assert chunk.json()["heading"] == "Handbook > Expenses"
    assert (chunk.json()["documentId"], chunk.json()["chunk"]) == (world["document"], 1)
    assert chunk.json()["text"] == "Receipts go to the finance inbox within a week."


def test_a_malformed_or_unknown_node_id(alice: Tenancy, world):
    assert alice.api().get("/api/knowledge/nodes/banana").status_code == 400
    assert alice.api().get("/api/knowledge/nodes/mem_99999").status_code == 404
    assert alice.api().get(f"/api/knowledge/nodes/{world['document']}:77").status_code == 404


def test_another_tenant_sees_no_node_and_no_edge(alice: Tenancy, bob: Tenancy, world):
    api = bob.api()
    bobs = write(bob, "Bob's own fact.")
    edge = world["edges"]["supports"].public_id
    # when / then
    assert api.get("/api/knowledge/edges").json()["count"] == 0
    assert api.get(f"/api/knowledge/nodes/{world['leave']}").status_code == 404
    assert api.get(f"/api/knowledge/edges/{edge}").status_code == 404
    assert api.get(f"/api/knowledge/nodes/{world['holidays']}").status_code == 404
    assert api.get("/api/knowledge/edges", {"node": world["leave"]}).status_code == 404
    assert api.post(f"/api/knowledge/edges/{edge}/invalidate", {}, format="json").status_code == (
        404
    )
    refused = api.post(
        "/api/knowledge/edges",
        {"type": "supports", "fromId": bobs, "toId": world["leave"]},
        format="json",
    )
    assert refused.status_code == 404
    assert "toId" in refused.json()["message"]
    assert KnowledgeEdge.objects.count() == 4
    assert KnowledgeEdge.objects.filter(valid_to__isnull=False).count() == 0


def test_a_person_links_two_nodes_they_see(alice: Tenancy, world):
    # when
    answer = alice.api().post(
        "/api/knowledge/edges",
        {
            "type": "supports",
            "fromId": world["expenses"],
            "toId": world["receipts"],
            "confidence": 0.6,
            "reasoning": "The handbook says so.",
        },
        format="json",
    )
    again = alice.api().post(
        "/api/knowledge/edges",
        {"type": "supports", "fromId": world["expenses"], "toId": world["receipts"]},
        format="json",
    )
    # then
    assert answer.status_code == 201, answer.json()
    edge = answer.json()
    assert edge["createdBy"] == {"kind": "user", "user": alice.user.username}
    assert (edge["fromId"], edge["toId"], edge["confidence"]) == (
        world["expenses"],
        world["receipts"],
        0.6,
    )
    assert edge["reasoning"] == "The handbook says so."
    assert again.status_code == 200
    assert again.json()["id"] == edge["id"]
    listed = alice.api().get("/api/knowledge/edges", {"createdBy": "user"}).json()
    assert edge["id"] in {row["id"] for row in listed["results"]}


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"type": "likes"}, "type", 400),
        ({"type": None}, "type", 400),
        ({"fromId": "potato"}, "fromId", 400),
        ({"fromId": "mem_99999"}, "fromId", 404),
        ({"toId": "doc_99999:0"}, "toId", 404),
        ({"toId": None}, "toId", 400),
        ({"confidence": 1.5}, "confidence", 400),
        ({"confidence": "high"}, "confidence", 400),
        ({"toId": "FROM"}, "toId", 400),
    ],
)
def test_a_bad_edge_is_refused_naming_the_field(alice: Tenancy, world, change, field, code):
    # given
    body = {"type": "mentions", "fromId": world["leave"], "toId": world["holidays"]}
    body.update(change)
    if body["toId"] == "FROM":
        body["toId"] = body["fromId"]
    body = {name: value for name, value in body.items() if value is not None}
    # when
    answer = alice.api().post("/api/knowledge/edges", body, format="json")
    # then
    assert answer.status_code == code, answer.json()
    refusal = answer.json()
    assert field in refusal["message"] or refusal["error"] == field
    if code == 400:  # a field of the body (DRF's check) or of a service (its error word)
        assert refusal["error"] == field or set(refusal["fields"]) == {field}
    assert KnowledgeEdge.objects.count() == 4


def test_invalidating_keeps_the_row_and_hides_it_by_default(alice: Tenancy, world):
    # given
    api = alice.api()
    edge = world["edges"]["mentions"].public_id
    # when
    answer = api.post(
        f"/api/knowledge/edges/{edge}/invalidate", {"reason": "wrong chunk"}, format="json"
    )
    # then
    assert answer.status_code == 200, answer.json()
    assert answer.json()["validTo"] is not None
    assert answer.json()["invalidatedReason"] == "wrong chunk"
    row = KnowledgeEdge.objects.get(pk=world["edges"]["mentions"].pk)
    assert (row.valid_to is not None, row.invalidated_reason) == (True, "wrong chunk")
    listed = api.get("/api/knowledge/edges").json()
    assert edge not in {row["id"] for row in listed["results"]}
    assert listed["count"] == 3
    everything = api.get("/api/knowledge/edges", {"includeInvalid": "true"}).json()
    shown = {row["id"]: row for row in everything["results"]}
    assert shown[edge]["validTo"] == answer.json()["validTo"]
    assert api.get(f"/api/knowledge/edges/{edge}").json() == answer.json()
    node = api.get(f"/api/knowledge/nodes/{world['receipts']}").json()
    assert "mentions" not in {row["type"] for row in node["edges"]}
    node = api.get(f"/api/knowledge/nodes/{world['receipts']}", {"includeInvalid": "true"}).json()
    assert "mentions" in {row["type"] for row in node["edges"]}
    # when: invalidated again
    again = api.post(f"/api/knowledge/edges/{edge}/invalidate", {}, format="json")
    # then: a 409, the first reason kept
    assert again.status_code == 409
    assert KnowledgeEdge.objects.get(pk=row.pk).invalidated_reason == "wrong chunk"


def test_an_unknown_edge_is_a_404(alice: Tenancy, world):
    for edge in ("edge_99999", "banana"):
        answer = alice.api().post(f"/api/knowledge/edges/{edge}/invalidate", {}, format="json")
        assert answer.status_code == 404


def test_deleting_a_document_deletes_the_edges_of_its_chunks(alice: Tenancy, world):
    # when
    assert alice.api().delete(f"/api/documents/{world['document']}").status_code == 204
    # then
    left = alice.api().get("/api/knowledge/edges").json()["results"]
    assert [edge["type"] for edge in left] == ["contradicts"]
