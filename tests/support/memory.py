"""Memory test helpers: waiting for the embedding of written items."""

from __future__ import annotations

from vancetope.memory.indexing import wait_for_embeddings


def embedded() -> None:
    wait_for_embeddings()
