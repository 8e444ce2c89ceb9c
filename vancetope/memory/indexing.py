"""Passages: made when an item is written or a document chunked, deleted when the item is
invalidated or the document deleted; embedded off the request path.

The embedding runs as the Celery task `memory.embed_passages` after the writing transaction
commits: on the distributed runtime a worker takes it, on the embedded default a one-thread
pool of this process runs the same function.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction
from django.db.models import F

from vancetope.memory.embeddings import get_embedder
from vancetope.memory.models import DocumentChunk, MemoryItem, Passage, Scope, VectorClock
from vancetope.memory.vectors import get_store

log = logging.getLogger(__name__)

BATCH = 256


def item_passage(item: MemoryItem) -> Passage:
    return Passage(
        tenant_id=item.tenant_id,
        group_id=item.group_id,
        project_id=item.project_id,
        session_ref=item.session_ref,
        owner_id=item.owner_id if item.scope == Scope.SESSION else None,
        scope=item.scope,
        item=item,
        text=f"{item.key}: {item.content}" if item.key else item.content,
    )


def chunk_passage(chunk: DocumentChunk) -> Passage:
    document = chunk.document
    heading = f"{document.title} > {chunk.heading}" if chunk.heading else document.title
    return Passage(
        tenant_id=document.tenant_id,
        project_id=document.project_id,
        scope=Scope.PROJECT,
        chunk=chunk,
        text=f"{heading}\n{chunk.text}",
    )


def index(passages: list[Passage]) -> list[int]:
    """Store passages and queue their embedding once this transaction commits."""
    created = Passage.objects.bulk_create(passages, batch_size=500)
    ids = [passage.pk for passage in created]
    if ids and get_embedder() is not None:
        transaction.on_commit(lambda: dispatch_embedding(ids))
    return ids


def unindex(passages: Iterable[int]) -> None:
    ids = list(passages)
    if ids:
        if get_embedder() is not None:
            get_store().remove(ids)
        Passage.objects.filter(pk__in=ids).delete()


def embed_passages(passage_ids: list[int]) -> int:
    """Embed those of these passages that still exist and have no vector; how many."""
    embedder = get_embedder()
    if embedder is None:
        return 0
    done = 0
    for start in range(0, len(passage_ids), BATCH):
        rows = list(
            Passage.objects.filter(
                pk__in=passage_ids[start : start + BATCH], vector__isnull=True
            ).only("pk", "tenant_id", "text")
        )
        if not rows:
            continue
        vectors = embedder.embed([row.text for row in rows])
        with transaction.atomic():
            last = advance_vector_clock(len(rows))
            for i, (row, vector) in enumerate(zip(rows, vectors, strict=True)):
                row.vector = vector.tobytes()
                row.embedder = embedder.name
                row.vector_seq = last - len(rows) + 1 + i
            Passage.objects.bulk_update(rows, ["vector", "embedder", "vector_seq"])
            get_store().add(
                [(row.pk, row.tenant_id, vector) for row, vector in zip(rows, vectors, strict=True)]
            )
        done += len(rows)
    return done


def advance_vector_clock(count: int) -> int:
    """Advance the clock by `count` inside the caller's transaction; its new value. The row
    stays locked until that transaction ends, so embedders commit in clock order."""
    if not VectorClock.objects.filter(pk=1).update(value=F("value") + count):
        try:
            with transaction.atomic():
                VectorClock.objects.create(pk=1, value=count)
                return count
        except IntegrityError:  # another embedder made it first
            VectorClock.objects.filter(pk=1).update(value=F("value") + count)
    return int(VectorClock.objects.values_list("value", flat=True).get(pk=1))


class _EmbeddingPool:
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._lock = threading.Lock()
        self._futures: list[Future[None]] = []

    def submit(self, passage_ids: list[int]) -> None:
        with self._lock:
            self._futures = [f for f in self._futures if not f.done()]
            self._futures.append(self._executor.submit(self._run, passage_ids))

    @staticmethod
    def _run(passage_ids: list[int]) -> None:
        try:
            embed_passages(passage_ids)
        except Exception:
            log.exception("embedding %d passages failed", len(passage_ids))
        finally:
            close_old_connections()

    def wait(self) -> None:
        with self._lock:
            futures = list(self._futures)
        for future in futures:
            future.result()


_pool = _EmbeddingPool()


def dispatch_embedding(passage_ids: list[int]) -> None:
    if settings.VANCETOPE_WORKER == "inprocess":
        _pool.submit(passage_ids)
    else:
        from vancetope.memory.tasks import embed_passages_task

        embed_passages_task.delay(passage_ids)


def wait_for_embeddings() -> None:
    """Until the in-process pool has embedded everything queued so far (tests, benches)."""
    _pool.wait()
