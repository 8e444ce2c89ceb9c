"""Lexical search: FTS5 (bm25) on SQLite, a tsvector with websearch_to_tsquery (ts_rank_cd) on
PostgreSQL. Migration 0002 builds the index beside the passage table; this module asks it.

A query's words are not all required (a question rarely holds every word of its answer), but a
query of three or more words must match at least two of them ("minimum should match"): a
passage that shares one incidental word ("two", "day") with a question is noise that would
crowd the fused ranking. Both databases get the same expression, an OR of word pairs (AND binds
tighter than OR in FTS5 and in websearch_to_tsquery alike), after the commonest English words
are dropped; equal ranks are ordered by passage id, so lexical-only search is deterministic.
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

from django.db import connection

from vancetope.memory.models import Scope
from vancetope.memory.scopes import Reach

# At most this many words of a query count (pairs of ten words: 45 alternatives).
MAX_WORDS = 10
# The Snowball English stop words (PostgreSQL's `english` configuration drops exactly these), so
# a query's clauses are the same on SQLite, whose FTS5 keeps every word.
STOPWORDS = frozenset(
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his "
    "himself she her hers herself it its itself they them their theirs themselves what which "
    "who whom this that these those am is are was were be been being have has had having do "
    "does did doing a an the and but if or because as until while of at by for with about "
    "against between into through during before after above below to from up down in out on "
    "off over under again further then once here there when where why how all any both each "
    "few more most other some such no nor not only own same so than too very s t can will "
    "just don should now".split()
)


def query_words(query: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", query.lower()):
        if word not in STOPWORDS and len(word) > 1:
            seen.setdefault(word, None)
    return list(seen)[:MAX_WORDS]


def clauses(words: list[str]) -> list[list[str]]:
    """The alternatives a passage must match one of: a word each (up to two words), else
    every pair of words."""
    if len(words) <= 2:
        return [[word] for word in words]
    return [list(pair) for pair in combinations(words, 2)]


def visibility_sql(reach: Reach, alias: str = "p") -> tuple[str, list[Any]]:
    """The WHERE condition of Reach.q for raw SQL over passages aliased `alias`."""
    parts: list[str] = []
    params: list[Any] = []

    def among(column: str, values: frozenset[int]) -> str:
        params.extend(sorted(values))
        return f"{alias}.{column} IN ({', '.join(['%s'] * len(values))})"

    for scope, column, values in (
        (Scope.TENANT, "tenant_id", reach.tenant_ids),
        (Scope.GROUP, "group_id", reach.group_ids),
        (Scope.PROJECT, "project_id", reach.project_ids),
        (Scope.SESSION, "session_ref", reach.session_refs),
    ):
        if values:
            params.append(str(scope))
            parts.append(f"({alias}.scope = %s AND {among(column, values)})")
    if reach.owner_id is not None and reach.owner_project_ids:
        params.extend([str(Scope.SESSION), reach.owner_id])
        parts.append(
            f"({alias}.scope = %s AND {alias}.owner_id = %s AND "
            f"{among('project_id', reach.owner_project_ids)})"
        )
    return ("(" + " OR ".join(parts) + ")") if parts else "1 = 0", params


def lexical_ids(reach: Reach, query: str, limit: int, scope: str | None = None) -> list[int]:
    """Passage ids that match `query`, best first."""
    words = query_words(query)
    if not words:
        return []
    where, params = visibility_sql(reach)
    if scope:
        where += " AND p.scope = %s"
        params.append(scope)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT p.id FROM memory_passage p, websearch_to_tsquery('english', %s) q "
                f"WHERE p.text_search @@ q AND {where} "
                "ORDER BY ts_rank_cd(p.text_search, q) DESC, p.id LIMIT %s",
                [" or ".join(" ".join(clause) for clause in clauses(words)), *params, limit],
            )
        else:
            match = " OR ".join(
                " AND ".join(f'"{word}"' for word in clause) for clause in clauses(words)
            )
            cursor.execute(
                "SELECT p.id FROM memory_passage_fts f JOIN memory_passage p ON p.id = f.rowid "
                f"WHERE memory_passage_fts MATCH %s AND {where} "
                "ORDER BY bm25(memory_passage_fts), p.id LIMIT %s",
                [match, *params, limit],
            )
        return [row[0] for row in cursor.fetchall()]
