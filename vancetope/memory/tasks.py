"""Celery tasks: thin, call the service."""

from __future__ import annotations

from celery import shared_task

from vancetope.memory.indexing import embed_passages


@shared_task(name="memory.embed_passages")
def embed_passages_task(passage_ids: list[int]) -> int:
    return embed_passages(passage_ids)
