"""Hybrid search: both rankings and their fusion, what it never returns, the vector store it
says it uses, and a configured embeddings endpoint through the real openai client."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sessions_app.models import Session
from tests.support.embeddings_stub import EmbeddingsStubServer
from tests.support.memory import embedded
from tests.support.tenancy import Tenancy
from vancetope.memory.items import Source, invalidate_item, write_item
from vancetope.memory.models import MemoryItem, Passage, Scope, SourceKind
from vancetope.memory.scopes import Target, project_reach
from vancetope.memory.search import Mode, search

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = [
    "The staging database is backed up every night at two o'clock.",
    "Our office dog is called Biscuit and likes carrots.",
    "Invoices are paid within thirty days of receipt.",
]


def remember(
    tenancy: Tenancy, content: str, scope: Scope = Scope.PROJECT, **extra: Any
) -> MemoryItem:
    target = Target(scope, tenancy.tenant, project=tenancy.project, **extra)
    return write_item(target, content, Source(SourceKind.USER, "test"))


def test_a_result_carries_scope_source_score_snippet_and_both_ranks(alice: Tenancy) -> None:
    # given
    for fact in FACTS:
        remember(alice, fact)
    embedded()
    # when
    results = search(project_reach(alice.project), "when is the database backed up", 3)
    # then
    best = results[0]
    assert best["snippet"] == FACTS[0]
    assert best["scope"] == "project"
    assert best["source"] == {"kind": "user", "id": "test"}
    assert best["lexicalRank"] == 1
    assert best["denseRank"] == 1
    assert best["score"] == pytest.approx(2 / 61, abs=1e-6)


def test_the_dense_ranking_finds_an_item_that_shares_no_word_with_the_question(
    alice: Tenancy,
) -> None:
    # given
    for fact in FACTS:
        remember(alice, fact)
    embedded()
    # when
    results = search(project_reach(alice.project), "puppy", 3, mode=Mode.DENSE)
    # then
    assert results[0]["snippet"] == FACTS[1]
    assert results[0]["lexicalRank"] is None


def test_lexical_only_search_answers_in_the_same_order_every_time(alice: Tenancy) -> None:
    # given
    for i in range(6):
        remember(alice, f"Release note {i}: the release went out on time.")
    # when
    orders = [
        [
            hit["itemId"]
            for hit in search(project_reach(alice.project), "release", 6, mode=Mode.LEXICAL)
        ]
        for _ in range(3)
    ]
    # then
    assert len(orders[0]) == 6
    assert orders[0] == orders[1] == orders[2]


def test_search_never_returns_an_invalidated_or_superseded_item(alice: Tenancy) -> None:
    # given
    gone = remember(alice, "The wifi password is hunter2.")
    invalidate_item(gone, "wrong")
    target = Target(Scope.PROJECT, alice.tenant, project=alice.project)
    write_item(target, "The printer is on floor one.", Source(SourceKind.USER), key="printer")
    write_item(target, "The printer is on floor three.", Source(SourceKind.USER), key="printer")
    embedded()
    # when
    wifi = search(project_reach(alice.project), "wifi password", 5)
    printer = search(project_reach(alice.project), "printer floor", 5)
    # then
    assert gone.public_id not in [hit["itemId"] for hit in wifi]
    assert "hunter2" not in str(wifi)
    assert [hit["snippet"] for hit in printer] == ["The printer is on floor three."]


def test_search_never_returns_another_tenants_or_another_sessions_items(
    alice: Tenancy, bob: Tenancy, session: Session
) -> None:
    # given
    remember(bob, "Bob's deployment key lives in the vault.")
    remember(
        alice, "Alice's deployment key lives in a drawer.", Scope.SESSION, session_ref=session.pk
    )
    embedded()
    # when
    from_alice_project = search(project_reach(alice.project), "deployment key", 5)
    from_alice_session = search(project_reach(alice.project, session.pk), "deployment key", 5)
    # then
    assert from_alice_project == []
    assert [hit["snippet"] for hit in from_alice_session] == [
        "Alice's deployment key lives in a drawer."
    ]


def test_one_log_line_says_which_vector_store_is_used(
    alice: Tenancy, caplog: pytest.LogCaptureFixture
) -> None:
    # given
    caplog.set_level(logging.INFO, logger="vancetope.memory.vectors")
    remember(alice, FACTS[0])
    embedded()
    # when
    search(project_reach(alice.project), "backup", 1)
    search(project_reach(alice.project), "backup", 1)
    # then
    lines = [r.getMessage() for r in caplog.records if "vectors are kept" in r.getMessage()]
    assert len(lines) == 1
    # This machine's SQLite module loads no extensions and its PostgreSQL has no pgvector.
    assert lines[0].endswith(("exact scan in memory", "sqlite-vec", "pgvector"))


def test_the_exact_scan_in_memory_sees_rows_added_and_removed_after_it_loaded(
    alice: Tenancy, settings: Any
) -> None:
    # given
    first = remember(alice, FACTS[0])
    embedded()
    assert search(project_reach(alice.project), "nightly backups", 1, mode=Mode.DENSE)
    # when
    invalidate_item(first, "gone")
    remember(alice, FACTS[1])
    embedded()
    results = search(project_reach(alice.project), "nightly backups", 5, mode=Mode.DENSE)
    # then
    assert [hit["snippet"] for hit in results] == [FACTS[1]]


def test_with_dense_off_search_is_lexical_and_nothing_is_embedded(
    alice: Tenancy, settings: Any
) -> None:
    # given
    settings.VANCETOPE_EMBEDDINGS = "off"
    remember(alice, FACTS[0])
    # when
    results = search(project_reach(alice.project), "database backups", 3)
    # then
    assert [hit["denseRank"] for hit in results] == [None]
    assert not Passage.objects.filter(vector__isnull=False).exists()


def test_a_configured_embeddings_endpoint_is_asked_through_the_openai_client(
    alice: Tenancy, settings: Any
) -> None:
    with EmbeddingsStubServer() as stub:
        # given
        settings.VANCETOPE_EMBEDDINGS = "openai"
        settings.VANCETOPE_EMBEDDINGS_BASE_URL = stub.base_url
        settings.VANCETOPE_EMBEDDINGS_MODEL = "stub-embedder"
        for fact in FACTS:
            remember(alice, fact)
        embedded()
        # when
        results = search(project_reach(alice.project), "carrots", 1, mode=Mode.DENSE)
    # then
    assert results[0]["snippet"] == FACTS[1]
    assert {request.path for request in stub.recorded} == {"/v1/embeddings"}
    assert stub.recorded[0].body["model"] == "stub-embedder"
    assert set(Passage.objects.values_list("embedder", flat=True)) == {"endpoint:stub-embedder"}


def test_search_over_rest_validates_its_parameters(alice: Tenancy) -> None:
    api = alice.api()
    assert api.get("/api/memory/search", {"q": ""}).status_code == 400
    assert api.get("/api/memory/search", {"q": "x", "k": "0"}).status_code == 400
    assert api.get("/api/memory/search", {"q": "x", "k": "many"}).status_code == 400
    assert api.get("/api/memory/search", {"q": "x", "mode": "magic"}).status_code == 400
    assert api.get("/api/memory/search", {"q": "x", "scope": "world"}).status_code == 400
    assert api.get("/api/memory/search", {"q": "x", "project": "proj_nope"}).status_code == 404
