"""Hybrid search over memory items and document chunks: lexical and dense rankings fused by
reciprocal rank (RRF, k=60). Both rankings only ever hold passages the reader may see: the
lexical query filters by visibility itself, the dense candidates are filtered before ranking;
an invalidated item or a deleted document has no passage left.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from vancetope.errors import BadRequest
from vancetope.memory.embeddings import get_embedder
from vancetope.memory.lexical import lexical_ids
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
    rows = Passage.objects.filter(reach.q(), pk__in=candidates)
    if scope:
        rows = rows.filter(scope=scope)
    visible = set(rows.values_list("pk", flat=True))
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
        raise BadRequest("q must not be empty", error="q")
    if not 1 <= k <= MAX_K:
        raise BadRequest(f"k must be between 1 and {MAX_K}", error="k")
    if scope is not None and scope not in Scope.values:
        raise BadRequest(f"scope must be one of {', '.join(Scope.values)}", error="scope")
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
    rows = (
        Passage.objects.filter(pk__in=[hit.passage_id for hit in hits])
        .select_related("item", "chunk__document")
        # Neither the vector nor the whole document is part of a result.
        .defer("vector", "chunk__document__content")
    )
    passages = {row.pk: row for row in rows}
    return [
        result_data(passages[hit.passage_id], hit) for hit in hits if hit.passage_id in passages
    ]


def result_data(passage: Passage, hit: Hit) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if passage.item is not None:
        item = passage.item
        data["itemId"] = item.public_id
        source = {"kind": item.source_kind, "id": item.source_id or None}
        text = item.content
    else:
        assert passage.chunk is not None
        chunk = passage.chunk
        data["documentId"] = chunk.document.public_id
        data["chunk"] = chunk.index
        data["title"] = chunk.document.title
        source = {"kind": "document", "id": chunk.document.public_id}
        text = chunk.text
    return {
        **data,
        "scope": passage.scope,
        "source": source,
        "score": round(hit.score, 6),
        "snippet": snippet(text),
        "lexicalRank": hit.lexical_rank,
        "denseRank": hit.dense_rank,
    }
