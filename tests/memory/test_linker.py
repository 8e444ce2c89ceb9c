"""The brain linker's kernel (issue 14 item 5): candidates are nearest neighbours on the same
subject, never the whole graph; a structured verdict per pair; edges, invalidation and the
budget of LLM calls."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.config.helpers import set_value
from tests.support.linker import SIX, contradiction_script, verdict, write
from tests.support.memory import embedded
from tests.support.tenancy import Tenancy
from vancetope.config.models import Scope as SettingScope
from vancetope.config.registry import SettingRefused, get_key
from vancetope.memory import linker
from vancetope.memory.items import Source, write_item
from vancetope.memory.models import (
    EdgeType,
    KnowledgeEdge,
    LinkerVerdict,
    MemoryItem,
    Scope,
    SourceKind,
)
from vancetope.memory.scopes import Target
from vancetope.tenancy.models import Project

pytestmark = pytest.mark.django_db(transaction=True)


def six_items(tenancy: Tenancy) -> list[Any]:
    items = [write(tenancy, text) for text in SIX]
    embedded()
    return items


def test_six_items_two_contradicting_give_one_contradicts_edge_and_invalidate_the_older(
    alice: Tenancy, script: Any
) -> None:
    # given six items of one project, the first and the last contradicting each other
    script(contradiction_script())
    items = six_items(alice)
    postgres, mysql = items[0], items[-1]
    # when the linker runs its contradiction scan with a budget of 10 calls
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_7")
    # then exactly that pair got a contradicts edge, newer -> older, by this run
    edges = list(KnowledgeEdge.objects.filter(type=EdgeType.CONTRADICTS))
    assert [(e.from_item_id, e.to_item_id) for e in edges] == [(mysql.pk, postgres.pk)]
    assert (edges[0].created_by_kind, edges[0].created_by_id) == ("linker", "run_7")
    assert edges[0].confidence == 0.95
    assert edges[0].reasoning == "One engine cannot be both."
    assert not KnowledgeEdge.objects.exclude(pk=edges[0].pk).exists()
    # and the older item is invalidated, naming the edge and the newer item
    postgres.refresh_from_db()
    assert postgres.valid_to is not None
    assert (
        postgres.invalidated_reason
        == f"contradicted by {mysql.public_id} (edge_{edges[0].pk}, linker run_7)"
    )
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 5
    # and it stayed within its budget, asking only about nearest neighbours on one subject:
    # the database pair, not the 15 pairs of six items
    assert report.llm_calls <= 10
    assert report.llm_calls == len(report.asked) < len(list(combinations(items, 2)))
    assert report.asked == [(mysql.public_id, postgres.public_id, "contradiction_scan")]
    assert report.edges_created == {"contradicts": 1, "supports": 0}
    assert report.items_invalidated == [postgres.public_id]
    assert report.approvals_posted == []
    assert report.errors == []
    assert report.status == "completed"
    assert report.tokens > 0


def test_every_pair_asked_is_among_each_items_nearest_neighbours_on_its_subject(
    alice: Tenancy, script: Any
) -> None:
    script(contradiction_script())
    items = six_items(alice)
    report = linker.run_linker(alice.project, ["contradiction_scan"], 50, run_id="run_1")
    # the coffee machine, the mobile team and the API limit share no subject with anything
    lonely = {items[2].public_id, items[3].public_id, items[4].public_id}
    asked = {(newer, older) for newer, older, _ in report.asked}
    assert not any(newer in lonely or older in lonely for newer, older in asked)
    # each pair is asked once, and every verdict is recorded
    assert len(asked) == len(report.asked)
    assert LinkerVerdict.objects.count() == report.llm_calls


def test_two_statements_on_one_subject_in_other_words_are_asked_about(
    alice: Tenancy, script: Any
) -> None:
    # given two items on the API's rate limit that share few words (the offline model scores
    # them about 0.46), among the other four
    script(
        [
            {
                "engine": "brain_linker",
                "match": "(?s)OLDER.*100 requests.*NEWER.*60 requests",
                "reply": verdict("contradicts", 0.9, "100 and 60 a minute cannot both hold."),
            },
            {"engine": "brain_linker", "reply": verdict("unrelated", 0.9)},
        ]
    )
    items = [write(alice, text) for text in SIX[:5]]
    newer = write(alice, "Clients may send at most 60 requests a minute.")
    embedded()
    # when
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_3")
    # then that pair was asked and contradicts; nothing else did
    assert (newer.public_id, items[4].public_id, "contradiction_scan") in report.asked
    [edge] = KnowledgeEdge.objects.filter(type=EdgeType.CONTRADICTS)
    assert (edge.from_item_id, edge.to_item_id) == (newer.pk, items[4].pk)


def test_a_second_run_does_not_ask_about_pairs_judged_before(alice: Tenancy, script: Any) -> None:
    script([{"engine": "brain_linker", "reply": verdict("unrelated", 0.9)}])
    six_items(alice)
    first = linker.run_linker(alice.project, ["contradiction_scan"], 50, run_id="run_1")
    again = linker.run_linker(alice.project, ["contradiction_scan"], 50, run_id="run_2")
    assert first.llm_calls >= 1
    assert again.llm_calls == 0
    assert again.pairs_skipped == again.pairs_considered == first.pairs_considered


def test_a_supports_verdict_writes_a_supports_edge_and_invalidates_nothing(
    alice: Tenancy, script: Any
) -> None:
    script([{"engine": "brain_linker", "step": "support_scan", "reply": verdict("supports", 0.7)}])
    older = write(alice, "The staging database runs on PostgreSQL 16.")
    newer = write(alice, "The staging database was upgraded to PostgreSQL 16 in May.")
    embedded()
    report = linker.run_linker(alice.project, ["support_scan"], 5, run_id="run_3")
    edge = KnowledgeEdge.objects.get()
    assert (edge.type, edge.from_item_id, edge.to_item_id) == ("supports", newer.pk, older.pk)
    assert report.edges_created == {"contradicts": 0, "supports": 1}
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 2


def test_max_llm_calls_stops_the_run_and_says_it_was_cut_short(alice: Tenancy, script: Any) -> None:
    script([{"engine": "brain_linker", "reply": verdict("unrelated", 0.9)}])
    write(alice, "The production database runs on PostgreSQL 16.")
    write(alice, "Deploys to production happen every Tuesday afternoon.")
    write(alice, "The production database runs on MySQL 8.")
    write(alice, "Production deploys happen on Tuesday afternoons.")
    embedded()
    report = linker.run_linker(alice.project, ["contradiction_scan"], 1, run_id="run_4")
    assert report.llm_calls == 1
    assert report.cut_short
    assert report.status == "completed_partial"
    # the next run (no budget problem) asks the rest, and not the pair judged already
    rest = linker.run_linker(alice.project, ["contradiction_scan"], 50, run_id="run_5")
    assert rest.llm_calls >= 1
    assert not rest.cut_short
    assert set(report.asked).isdisjoint({(n, o, s) for n, o, s in rest.asked})


def test_a_provider_error_or_a_malformed_answer_is_a_call_that_writes_nothing(
    alice: Tenancy, script: Any
) -> None:
    script(
        [
            {"engine": "brain_linker", "match": "(?s)NEWER.*MySQL", "error": "rate limited"},
            {"engine": "brain_linker", "match": "(?s)NEWER.*Tuesdays", "reply": "I think so."},
            {"engine": "brain_linker", "reply": verdict("unrelated", 0.9)},
        ]
    )
    write(alice, "The production database runs on PostgreSQL 16.")
    write(alice, "Deploys to production happen every Tuesday afternoon.")
    write(alice, "The production database runs on MySQL 8.")
    write(alice, "Production deploys happen on Tuesdays.")
    write(alice, "The office coffee machine is on the third floor.")
    write(alice, "The office coffee machine is now on the fourth floor.")
    embedded()
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_6")
    assert not KnowledgeEdge.objects.exists()
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 6
    assert any("the LLM call failed: rate limited" in error for error in report.errors)
    assert any("the answer is not a verdict: no JSON object" in error for error in report.errors)
    assert report.llm_calls == len(report.asked)
    assert report.verdicts >= 1
    assert report.status == "completed_partial"
    # a failed call is not a judgement: the next run asks it again
    failed = LinkerVerdict.objects.filter(verdict="error")
    assert failed.count() == len(report.errors)


def test_when_every_call_fails_the_report_is_failed(alice: Tenancy, script: Any) -> None:
    script([{"engine": "brain_linker", "error": "provider down"}])
    write(alice, "The production database runs on PostgreSQL 16.")
    write(alice, "The production database runs on MySQL 8.")
    embedded()
    report = linker.run_linker(alice.project, [], 10, run_id="run_8")
    assert report.strategies == ["contradiction_scan", "support_scan"]
    assert report.status == "failed"
    assert report.errors
    assert report.verdicts == 0


def test_with_dense_search_off_neighbours_come_from_shared_words(
    alice: Tenancy, script: Any, settings: Any
) -> None:
    settings.VANCETOPE_EMBEDDINGS = "off"
    script(contradiction_script())
    items = [write(alice, text) for text in SIX]
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_9")
    assert report.asked == [(items[-1].public_id, items[0].public_id, "contradiction_scan")]
    assert KnowledgeEdge.objects.get().type == "contradicts"


def test_items_of_one_key_are_paired_across_scopes_whatever_their_words(
    alice: Tenancy, script: Any
) -> None:
    script([{"engine": "brain_linker", "reply": verdict("unrelated", 0.9)}])
    tenant_wide = write(alice, "Blue.", key="brand.colour", scope=Scope.TENANT)
    mine = write(alice, "Our colour is a deep green.", key="brand.colour")
    embedded()
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_10")
    assert report.asked == [(mine.public_id, tenant_wide.public_id, "contradiction_scan")]


def test_another_projects_and_another_tenants_items_are_never_paired(
    alice: Tenancy, bob: Tenancy, script: Any
) -> None:
    script(contradiction_script())
    other = Project.objects.create(tenant=alice.tenant, slug="other", name="Other")
    write_item(
        Target(Scope.PROJECT, alice.tenant, project=other),
        "The production database runs on MySQL 8.",
        Source(SourceKind.USER, "alice"),
    )
    write(bob, "The production database runs on MySQL 8.")
    write(alice, "The production database runs on PostgreSQL 16.")
    embedded()
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_11")
    assert report.asked == []
    assert report.pairs_considered == 0


def test_items_older_than_the_window_are_not_recent(alice: Tenancy, script: Any) -> None:
    script(contradiction_script())
    six_items(alice)
    later = MemoryItem.objects.order_by("created_at").last()
    assert later is not None
    report = linker.run_linker(
        alice.project, ["contradiction_scan"], 10, run_id="run_12", since=later.created_at
    )
    assert report.asked == []


def test_the_threshold_and_neighbour_settings_come_from_the_project(
    alice: Tenancy, script: Any
) -> None:
    # a project whose threshold is above the verdict's confidence: no invalidation, an approval
    script(contradiction_script(confidence=0.95))
    set_value("linker.contradictionThreshold", SettingScope.PROJECT, alice.project, 0.99)
    items = six_items(alice)
    asked: list[linker.Uncertain] = []

    def ask(uncertain: linker.Uncertain) -> str:
        asked.append(uncertain)
        return "inb_99"

    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="r", ask=ask)
    assert [(u.newer.pk, u.older.pk, u.confidence, u.threshold) for u in asked] == [
        (items[-1].pk, items[0].pk, 0.95, 0.99)
    ]
    assert report.approvals_posted == ["inb_99"]
    assert report.items_invalidated == []
    assert LinkerVerdict.objects.get(verdict="contradicts").approval_id == "inb_99"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("linker.contradictionThreshold", 1.5),
        ("linker.minSimilarity", -0.1),
        ("linker.neighbours", 0),
        ("linker.windowHours", "24"),
        ("linker.maxLlmCalls", 0),
    ],
)
def test_linker_settings_are_validated_like_the_others(name: str, value: Any) -> None:
    with pytest.raises(SettingRefused, match=name):
        get_key(name).validate(value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no JSON object"),
        ('{"reasoning": "x", "verdict": "maybe", "confidence": 0.5}', "verdict must be one of"),
        ('{"reasoning": "x", "verdict": "supports", "confidence": 2}', "confidence must be"),
        ('{"reasoning": "x", "verdict": "supports", "confidence": true}', "confidence must be"),
        ('{"verdict": "supports", "confidence": 0.5}', "reasoning must be"),
        ('{"reasoning": "x", "verdict": ', "no JSON object"),
        ('{"reasoning": "x", "verdict": "supports", "confidence": 0.5,}', "invalid JSON"),
    ],
)
def test_an_answer_that_is_not_a_verdict_says_what_does_not_fit(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        linker.parse_verdict(text)


def test_a_verdict_in_a_json_fence_is_read() -> None:
    found = linker.parse_verdict(
        '```json\n{"reasoning": "r", "verdict": "supports", "confidence": 1}\n```'
    )
    assert found == linker.Verdict("r", "supports", 1.0)


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(Exception, match="unknown strategy 'guess'"):
        linker.check_strategies(["guess"])


def test_the_script_of_docs_engines_md_drives_the_linker_as_the_page_says(
    alice: Tenancy, script: Any
) -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "engines.md"
    marker = "# VANCETOPE_LLM_SCRIPT: one contradiction, everything else unrelated\n"
    block = docs.read_text().split(marker, 1)[1].split("```", 1)[0]
    script(yaml.safe_load(block))
    items = six_items(alice)
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_13")
    edge = KnowledgeEdge.objects.get()
    assert (edge.type, edge.from_item_id, edge.to_item_id) == (
        "contradicts",
        items[-1].pk,
        items[0].pk,
    )
    assert edge.reasoning == "One engine cannot be both."
    assert report.items_invalidated == [items[0].public_id]


def test_an_uncertain_contradiction_with_no_approval_poster_is_an_error_that_writes_nothing(
    alice: Tenancy, script: Any
) -> None:
    script(contradiction_script(confidence=0.5))
    items = six_items(alice)
    report = linker.run_linker(alice.project, ["contradiction_scan"], 10, run_id="run_14")
    assert report.errors == [
        f"{items[-1].public_id}/{items[0].public_id}: RuntimeError: this run has no approval "
        "poster for uncertain contradictions"
    ]
    assert report.edges_created == {"contradicts": 0, "supports": 0}
    assert report.status == "failed"
    # the verdict's writes went back with it: no edge, no record, asked again next time
    assert not KnowledgeEdge.objects.exists()
    assert not LinkerVerdict.objects.exists()
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 6
