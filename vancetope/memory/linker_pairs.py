"""The brain linker's candidate pairs: a recent item's nearest valid neighbours on the same
subject, as the project sees them (docs/memory.md, "The brain linker"), and whether a pair is
still worth asking."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Q

from vancetope.memory.lexical import lexical_ids, query_words
from vancetope.memory.models import EdgeType, KnowledgeEdge, LinkerVerdict, MemoryItem, Passage
from vancetope.memory.scopes import Reach
from vancetope.memory.vectors import get_store

# The verdict of a call that failed, or whose answer did not fit (not a judgement).
ERROR = "error"


@dataclass(frozen=True)
class Pair:
    """Two valid items on one subject; `newer` was written after `older`."""

    newer: MemoryItem
    older: MemoryItem
    similarity: float
    same_key: bool

    @property
    def key(self) -> tuple[int, int]:
        return (self.newer.pk, self.older.pk)


def both_valid(pair: Pair) -> bool:
    ids = [pair.newer.pk, pair.older.pk]
    return MemoryItem.objects.filter(pk__in=ids, valid_to__isnull=True).count() == 2


def judged(pair: Pair, strategy: str) -> bool:
    """Judged before by this strategy (a call that failed does not count), or joined by a
    valid contradicts or supports edge already."""
    verdicts = LinkerVerdict.objects.filter(
        newer_id=pair.newer.pk, older_id=pair.older.pk, strategy=strategy
    ).exclude(verdict=ERROR)
    if verdicts.exists():
        return True
    a, b = pair.key
    joined = Q(from_item_id=a, to_item_id=b) | Q(from_item_id=b, to_item_id=a)
    return (
        KnowledgeEdge.objects.filter(joined, valid_to__isnull=True)
        .filter(type__in=[EdgeType.CONTRADICTS, EdgeType.SUPPORTS])
        .exists()
    )


class Neighbours:
    """An item's nearest valid neighbours on the same subject, as the project sees them."""

    def __init__(self, reach: Reach, k: int, min_similarity: float) -> None:
        self.reach, self.k, self.min_similarity = reach, k, min_similarity
        self._found: dict[int, list[Pair]] = {}

    def pairs_of(self, item: MemoryItem) -> list[Pair]:
        if item.pk not in self._found:
            self._found[item.pk] = self._search(item)
        return self._found[item.pk]

    def _search(self, item: MemoryItem) -> list[Pair]:
        own = Passage.objects.filter(item=item).only("pk", "vector", "text").first()
        if own is None:
            return []  # invalidated since it was read
        vector = _vector(own.vector)
        depth = self.k * 4 + 10
        passages: list[int] = lexical_ids(self.reach, own.text, depth)
        if vector is not None and self.reach.tenant_ids:
            passages += get_store().nearest(sorted(self.reach.tenant_ids), vector, depth)
        near = Q(pk__in=passages)
        if item.key:
            near |= Q(item__key=item.key)
        candidates = (
            Passage.objects.filter(self.reach.q(), near, item__isnull=False)
            .exclude(item_id=item.pk)
            .filter(item__valid_to__isnull=True)
            .select_related("item")
        )
        words = set(query_words(own.text))
        scored: list[tuple[bool, float, MemoryItem]] = []
        for passage in candidates:
            other = passage.item
            assert other is not None
            same_key = bool(item.key) and other.key == item.key
            theirs = _vector(passage.vector)
            if vector is not None and theirs is not None and len(theirs) == len(vector):
                similarity = float(np.dot(vector, theirs))
            else:
                similarity = _word_cosine(words, set(query_words(passage.text)))
            if same_key or similarity >= self.min_similarity:
                scored.append((same_key, similarity, other))
        scored.sort(key=lambda row: (not row[0], -row[1], row[2].pk))
        return [_pair(item, other, similarity, same) for same, similarity, other in scored][
            : self.k
        ]


def _pair(item: MemoryItem, other: MemoryItem, similarity: float, same_key: bool) -> Pair:
    if (other.created_at, other.pk) > (item.created_at, item.pk):
        return Pair(other, item, similarity, same_key)
    return Pair(item, other, similarity, same_key)


def _vector(blob: Any) -> np.ndarray | None:
    if not blob:
        return None
    return np.frombuffer(bytes(blob), dtype=np.float32)


def _word_cosine(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / float(np.sqrt(len(a) * len(b)))
