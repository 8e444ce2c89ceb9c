"""Lexical search: FTS5 (bm25) on SQLite, a tsvector with websearch_to_tsquery (ts_rank_cd) on
PostgreSQL. Migration 0002 builds the index beside the passage table; this module asks it.

A query's words are OR-ed (a question rarely holds every word of its answer) after dropping
the commonest English words, the same way on both databases; equal ranks are ordered by
passage id, so lexical-only search answers in a deterministic order.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import connection

from vancetope.memory.models import Scope
from vancetope.memory.scopes import Reach

STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in is it its of on or that "
    "the this to was what when where which who why will with you your my me we our".split()
)


def query_words(query: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in re.findall(r"\w+", query.lower()):
        if word not in STOPWORDS and len(word) > 1:
            seen.setdefault(word, None)
    return list(seen)[:32]


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
                [" or ".join(words), *params, limit],
            )
        else:
            match = " OR ".join(f'"{word}"' for word in words)
            cursor.execute(
                "SELECT p.id FROM memory_passage_fts f JOIN memory_passage p ON p.id = f.rowid "
                f"WHERE memory_passage_fts MATCH %s AND {where} "
                "ORDER BY bm25(memory_passage_fts), p.id LIMIT %s",
                [match, *params, limit],
            )
        return [row[0] for row in cursor.fetchall()]
