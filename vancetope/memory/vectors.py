"""Where vectors are kept and searched: sqlite-vec, pgvector, or an exact scan in memory.

The passage row keeps every vector (float32 bytes), so any store can be rebuilt from it. The
store is chosen once per process, with one log line saying which:
- SQLite whose Python module may load extensions, with the sqlite-vec package: a `vec0` table
  per dimension, partitioned by tenant (exact KNN inside the database);
- PostgreSQL whose server offers the `vector` extension: a pgvector column (exact `<=>` scan);
- otherwise: the worker keeps each tenant's vectors in memory (numpy) and scans them exactly,
  catching up with newly embedded rows (by the vector clock) before each search.
Every store only proposes candidates; search.py keeps those the reader may see.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

import numpy as np
from django.db import DatabaseError, connection, transaction
from django.db.backends.signals import connection_created
from threadpoolctl import threadpool_limits

from vancetope.memory.models import Passage, VectorClock

log = logging.getLogger(__name__)


def load_sqlite_vec_on_connect() -> None:
    connection_created.connect(_load_sqlite_vec, dispatch_uid="memory-sqlite-vec")


def _load_sqlite_vec(sender: Any, connection: Any, **kwargs: Any) -> None:
    raw = connection.connection
    if connection.vendor != "sqlite" or not hasattr(raw, "enable_load_extension"):
        return
    try:
        import sqlite_vec
    except ImportError:
        return
    raw.enable_load_extension(True)
    try:
        sqlite_vec.load(raw)
    finally:
        raw.enable_load_extension(False)


class VectorStore(Protocol):
    name: str

    def add(self, rows: list[tuple[int, int, np.ndarray]]) -> None:
        """(passage id, tenant id, vector) rows, already stored on their passages."""
        ...

    def remove(self, passage_ids: list[int]) -> None: ...

    def nearest(self, tenant_ids: list[int], vector: np.ndarray, k: int) -> list[int]:
        """Passage ids, nearest first."""
        ...


class SqliteVecStore:
    name = "sqlite-vec"

    def _table(self, dim: int) -> str:
        table = f"memory_vec_{dim}"
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0(passage_id integer "
                f"primary key, tenant_id integer partition key, embedding float[{dim}] "
                "distance_metric=cosine)"
            )
        return table

    def add(self, rows: list[tuple[int, int, np.ndarray]]) -> None:
        if not rows:
            return
        table = self._table(len(rows[0][2]))
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT OR REPLACE INTO {table}(passage_id, tenant_id, embedding) "
                "VALUES (%s, %s, %s)",
                [(pk, tenant, vector.astype(np.float32).tobytes()) for pk, tenant, vector in rows],
            )

    def remove(self, passage_ids: list[int]) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE name LIKE 'memory\\_vec\\_%' ESCAPE '\\' "
                "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
            for (table,) in cursor.fetchall():
                for pk in passage_ids:
                    cursor.execute(f"DELETE FROM {table} WHERE passage_id = %s", [pk])

    def nearest(self, tenant_ids: list[int], vector: np.ndarray, k: int) -> list[int]:
        table = self._table(len(vector))
        found: list[tuple[float, int]] = []
        with connection.cursor() as cursor:
            for tenant in tenant_ids:
                cursor.execute(
                    f"SELECT passage_id, distance FROM {table} WHERE embedding MATCH %s "
                    "AND k = %s AND tenant_id = %s",
                    [vector.astype(np.float32).tobytes(), k, tenant],
                )
                found += [(distance, pk) for pk, distance in cursor.fetchall()]
        return [pk for _, pk in sorted(found)[:k]]


class PgVectorStore:
    name = "pgvector"

    def __init__(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cursor.execute(
                "CREATE TABLE IF NOT EXISTS memory_vec (passage_id bigint PRIMARY KEY "
                "REFERENCES memory_passage(id) ON DELETE CASCADE, tenant_id bigint NOT NULL, "
                "embedding vector NOT NULL)"
            )
            cursor.execute("CREATE INDEX IF NOT EXISTS memory_vec_tenant ON memory_vec(tenant_id)")

    @staticmethod
    def _literal(vector: np.ndarray) -> str:
        return "[" + ",".join(f"{value:.7g}" for value in vector.tolist()) + "]"

    def add(self, rows: list[tuple[int, int, np.ndarray]]) -> None:
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memory_vec(passage_id, tenant_id, embedding) VALUES (%s, %s, "
                "%s::vector) ON CONFLICT (passage_id) DO UPDATE SET embedding = EXCLUDED.embedding",
                [(pk, tenant, self._literal(vector)) for pk, tenant, vector in rows],
            )

    def remove(self, passage_ids: list[int]) -> None:
        # ON DELETE CASCADE from the passage row does it.
        return

    def nearest(self, tenant_ids: list[int], vector: np.ndarray, k: int) -> list[int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT passage_id FROM memory_vec WHERE tenant_id = ANY(%s) "
                "AND vector_dims(embedding) = %s ORDER BY embedding <=> %s::vector, passage_id "
                "LIMIT %s",
                [list(tenant_ids), len(vector), self._literal(vector), k],
            )
            return [row[0] for row in cursor.fetchall()]


class _Partition:
    """One tenant's vectors: a matrix and its passage ids, grown by appending."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, dtype=np.int64)
        self.matrix: np.ndarray | None = None
        self.pending: list[tuple[int, np.ndarray]] = []

    def matrix_now(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self.pending:
            new_ids = np.array([pk for pk, _ in self.pending], dtype=np.int64)
            new_rows = np.vstack([vector for _, vector in self.pending])
            if self.matrix is None or self.matrix.shape[1] != new_rows.shape[1]:
                # A new embedder's dimension replaces the old vectors (they are re-embedded).
                self.ids, self.matrix = new_ids, new_rows
            else:
                self.ids = np.concatenate([self.ids, new_ids])
                self.matrix = np.vstack([self.matrix, new_rows])
            self.pending = []
        return self.ids, self.matrix

    def drop(self, passage_ids: np.ndarray) -> None:
        ids, matrix = self.matrix_now()
        keep = ~np.isin(ids, passage_ids)
        if matrix is not None and not keep.all():
            self.ids, self.matrix = ids[keep], matrix[keep]


class MemoryScanStore:
    """Each tenant's vectors in this process's memory. Before a search it reads the vector
    clock (one row): rows embedded since it last looked are read by their `vector_seq`
    (an index range). Rows deleted by this process leave its memory at once; rows another
    process deleted stay until it restarts, and are never answered (search.py keeps only
    candidates that are still visible rows)."""

    name = "exact scan in memory"

    def __init__(self) -> None:
        # One BLAS thread: a scan is one matrix-vector product, which BLAS threads split into
        # pieces too small to pay for their hand-offs, and the Brain's own threads (lanes,
        # sockets, other searches) want the other cores; measured in docs/memory.md.
        threadpool_limits(limits=1, user_api="blas")
        self._lock = threading.Lock()
        self._partitions: dict[int, _Partition] = {}
        self._seq = 0

    def _catch_up(self) -> None:
        clock = VectorClock.objects.filter(pk=1).values_list("value", flat=True).first() or 0
        if clock <= self._seq:
            return
        newer = Passage.objects.filter(vector_seq__gt=self._seq).order_by("vector_seq")
        rows = newer.values_list("pk", "tenant_id", "vector", "vector_seq")
        for pk, tenant, blob, seq in rows.iterator(chunk_size=5000):
            vector = np.frombuffer(bytes(blob or b""), dtype=np.float32)
            self._partitions.setdefault(tenant, _Partition()).pending.append((pk, vector))
            self._seq = max(self._seq, seq or 0)

    def add(self, rows: list[tuple[int, int, np.ndarray]]) -> None:
        return  # read from the passage table at the next search

    def remove(self, passage_ids: list[int]) -> None:
        gone = np.array(passage_ids, dtype=np.int64)
        with self._lock:
            for partition in self._partitions.values():
                partition.drop(gone)

    def nearest(self, tenant_ids: list[int], vector: np.ndarray, k: int) -> list[int]:
        scored: list[tuple[np.ndarray, np.ndarray]] = []
        with self._lock:
            self._catch_up()
            for tenant in tenant_ids:
                partition = self._partitions.get(tenant)
                if partition is None:
                    continue
                ids, matrix = partition.matrix_now()
                if matrix is None or matrix.shape[1] != len(vector):
                    continue
                scored.append((ids, matrix @ vector))
        if not scored:
            return []
        ids = np.concatenate([ids for ids, _ in scored])
        scores = np.concatenate([scores for _, scores in scored])
        top = min(k, len(ids))
        best = np.argpartition(-scores, top - 1)[:top]
        # Highest score first; equal scores by id, so the order is deterministic.
        order = sorted(best.tolist(), key=lambda i: (-float(scores[i]), int(ids[i])))
        return [int(ids[i]) for i in order]


_store: list[VectorStore] = []
_store_lock = threading.Lock()


def _choose() -> VectorStore:
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        raw = connection.connection
        if hasattr(raw, "enable_load_extension"):
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT vec_version()")
                return SqliteVecStore()
            except Exception:  # noqa: BLE001 (no sqlite-vec: the fallback below)
                log.debug("sqlite-vec not loadable", exc_info=True)
        return MemoryScanStore()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            offered = cursor.fetchone() is not None
        if offered:
            try:
                with transaction.atomic():
                    return PgVectorStore()
            except DatabaseError as exc:  # e.g. no right to CREATE EXTENSION
                log.warning("memory: pgvector is offered but cannot be used: %s", exc)
    return MemoryScanStore()


def get_store() -> VectorStore:
    with _store_lock:
        if not _store:
            store = _choose()
            log.info("memory: vectors are kept and searched by %s", store.name)
            _store.append(store)
        return _store[0]


def reset_store() -> None:
    with _store_lock:
        _store.clear()
