"""Hybrid search over memory items and document chunks: lexical and dense rankings fused by
reciprocal rank (RRF, k=60). Both rankings only ever hold passages the reader may see: the
lexical query filters by visibility itself, the dense candidates are filtered before ranking;
an invalidated item or a deleted document has no passage left.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.db import connection

from vancetope.errors import BadRequest
from vancetope.memory.embeddings import get_embedder
from vancetope.memory.lexical import lexical_ids, visibility_sql
from vancetope.memory.models import Passage, Scope
from vancetope.memory.scopes import Reach
from vancetope.memory.vectors import get_store

RRF_K = 60
MAX_K = 50
SNIPPET_CHARS = 300


class Mode(StrEnum):
    HYBRID = "hybrid"  # both rankings, fused
    LEXICAL = "lexical"  # full-text only (deterministic: bm25 / ts_rank_cd, then id)
    DENSE = "dense"  # vectors only


@dataclass
class Hit:
    passage_id: int
    score: float
    lexical_rank: int | None = None
    dense_rank: int | None = None


def dense_ids(reach: Reach, query: str, limit: int, scope: str | None = None) -> list[int]:
    embedder = get_embedder()
    if embedder is None or not reach.tenant_ids:
        return []
    vector = embedder.embed([query])[0]
    # Candidates come from the reader's tenants; other scopes of them are filtered out here,
    # so ask for more than needed.
    candidates = get_store().nearest(sorted(reach.tenant_ids), vector, limit * 4)
    if not candidates:
        return []
    # Raw SQL with the lexical ranking's visibility condition: the ORM would compile this
    # query (a long IN list, the reach's OR of scopes) anew for every search.
    where, params = visibility_sql(reach)
    if scope:
        where += " AND p.scope = %s"
        params.append(scope)
    listed = ", ".join(["%s"] * len(candidates))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT p.id FROM memory_passage p WHERE p.id IN ({listed}) AND {where}",
            [*candidates, *params],
        )
        visible = {row[0] for row in cursor.fetchall()}
    return [pk for pk in candidates if pk in visible][:limit]


def fuse(lexical: list[int], dense: list[int]) -> list[Hit]:
    hits: dict[int, Hit] = {}
    for rank, pk in enumerate(lexical, start=1):
        hit = hits.setdefault(pk, Hit(pk, 0.0))
        hit.lexical_rank, hit.score = rank, hit.score + 1 / (RRF_K + rank)
    for rank, pk in enumerate(dense, start=1):
        hit = hits.setdefault(pk, Hit(pk, 0.0))
        hit.dense_rank, hit.score = rank, hit.score + 1 / (RRF_K + rank)
    return sorted(hits.values(), key=lambda hit: (-hit.score, hit.passage_id))


def search_hits(
    reach: Reach, query: str, k: int = 5, *, scope: str | None = None, mode: Mode = Mode.HYBRID
) -> list[Hit]:
    if not query.strip():
        raise BadRequest("q must not be empty", error="q", field="q")
    if not 1 <= k <= MAX_K:
        raise BadRequest(f"k must be between 1 and {MAX_K}", error="k", field="k")
    if scope is not None and scope not in Scope.values:
        raise BadRequest(
            f"scope must be one of {', '.join(Scope.values)}", error="scope", field="scope"
        )
    depth = max(4 * k, 40)
    lexical = lexical_ids(reach, query, depth, scope) if mode != Mode.DENSE else []
    dense = dense_ids(reach, query, depth, scope) if mode != Mode.LEXICAL else []
    return fuse(lexical, dense)[:k]


def snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def search(
    reach: Reach, query: str, k: int = 5, *, scope: str | None = None, mode: Mode = Mode.HYBRID
) -> list[dict[str, Any]]:
    """PROTOCOL's search results, best first."""
    hits = search_hits(reach, query, k, scope=scope, mode=mode)
    if not hits:
        return []
    rows = {row[0]: row for row in _result_rows([hit.passage_id for hit in hits])}
    return [result_data(rows[hit.passage_id], hit) for hit in hits if hit.passage_id in rows]


# The hits' passages with their item or their chunk and its document, in result_data's order
# (the foreign keys are nullable, so the joins are LEFT OUTER), without the vector or the whole
# document.
RESULT_COLUMNS = (
    "id",
    "scope",
    "item__id",
    "item__source_kind",
    "item__source_id",
    "item__content",
    "chunk__index",
    "chunk__text",
    "chunk__document__id",
    "chunk__document__title",
)


def _result_rows(passage_ids: list[int]) -> list[tuple[Any, ...]]:
    return list(Passage.objects.filter(pk__in=passage_ids).values_list(*RESULT_COLUMNS))


def result_data(row: tuple[Any, ...], hit: Hit) -> dict[str, Any]:
    """A result from a row of RESULT_COLUMNS."""
    _, scope, item_id, source_kind, source_id, content, index, text, document_id, title = row
    data: dict[str, Any] = {}
    if item_id is not None:
        data["itemId"] = f"mem_{item_id}"
        source = {"kind": source_kind, "id": source_id or None}
    else:
        data["documentId"] = f"doc_{document_id}"
        data["chunk"] = index
        data["title"] = title
        source = {"kind": "document", "id": f"doc_{document_id}"}
        content = text
    return {
        **data,
        "scope": scope,
        "source": source,
        "score": round(hit.score, 6),
        "snippet": snippet(content),
        "lexicalRank": hit.lexical_rank,
        "denseRank": hit.dense_rank,
    }
