"""The retrieval test of issue #14: 32 short documents (corpus/) and 20 questions phrased
without their documents' words (retrieval_questions.yaml); the expected document must be in
the top 3 for at least 18, through the dense path; lexical-only search stays deterministic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support.memory import embedded
from tests.support.tenancy import Tenancy
from vancetope.memory.documents import create_document
from vancetope.memory.lexical import STOPWORDS
from vancetope.memory.models import Document, Passage
from vancetope.memory.scopes import project_reach
from vancetope.memory.search import Mode, search

pytestmark = pytest.mark.django_db(transaction=True)

HERE = Path(__file__).parent
CORPUS = sorted((HERE / "corpus").glob("*.md"))
QUESTIONS = yaml.safe_load((HERE / "retrieval_questions.yaml").read_text())


def words(text: str) -> set[str]:
    """Content words, crudely stemmed (the first five letters), to prove no word is shared."""
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if w not in STOPWORDS and len(w) > 2}


def load_corpus(tenancy: Tenancy) -> dict[str, str]:
    ids = {}
    for path in CORPUS:
        title, _, body = path.read_text().partition("\n")
        document = create_document(
            tenancy.project, title.lstrip("# "), path.read_text(), "text/markdown", tenancy.user
        )
        ids[document.public_id] = path.stem
    embedded()
    return ids


def test_the_corpus_and_questions_are_as_the_issue_asks():
    assert len(CORPUS) >= 30
    assert len(QUESTIONS) == 20
    for entry in QUESTIONS:
        document = (HERE / "corpus" / f"{entry['expect']}.md").read_text()
        assert not words(entry["question"]) & words(document), entry


def test_the_expected_document_is_in_the_top_three_for_at_least_18_of_20(alice: Tenancy):
    # given
    slugs = load_corpus(alice)
    assert Passage.objects.filter(vector__isnull=False).count() == len(CORPUS)
    reach = project_reach(alice.project)
    # when
    misses = []
    for entry in QUESTIONS:
        top = [slugs[hit["documentId"]] for hit in search(reach, entry["question"], 3)]
        if entry["expect"] not in top:
            misses.append((entry["question"], entry["expect"], top))
    # then
    print(f"retrieval: {20 - len(misses)}/20 in the top 3; misses: {misses}")
    assert len(misses) <= 2, misses


def test_lexical_only_search_answers_the_corpus_in_a_deterministic_order(alice: Tenancy):
    # given
    load_corpus(alice)
    reach = project_reach(alice.project)
    queries = ["paid leave days", "water", "the sun and the moon", "bin for glass bottles"]
    # when
    runs = [
        [[hit["documentId"] for hit in search(reach, q, 10, mode=Mode.LEXICAL)] for q in queries]
        for _ in range(3)
    ]
    # then
    assert runs[0] == runs[1] == runs[2]
    assert all(runs[0])
    assert Document.objects.count() == len(CORPUS)
