"""Traces of a process tree on PostgreSQL + Redis (issue 26): the lanes run on a real Celery
worker, which exports its spans over OTLP/HTTP to a receiver here; the arthur → marvin →
workers tree is still one trace, its context carried across the Celery hop by the process
rows."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from django.db import connection

from tests.e2e.brain import CeleryWorker
from tests.support.observability import (
    OtlpReceiver,
    saturn_script,
    start_saturn,
    wait_for_tree_trace,
)
from vancetope.celery import app as celery_app

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (
            os.environ.get("DATABASE_URL", "").startswith("postgres")
            and os.environ.get("REDIS_URL")
        ),
        reason="needs PostgreSQL and Redis: set DATABASE_URL and REDIS_URL (.ci/run does)",
    ),
    pytest.mark.timeout(300),
]


@pytest.fixture
def traced_worker(settings, tmp_path: Path) -> Iterator[OtlpReceiver]:
    """A Celery worker on a queue of this test's own, running the Saturn script and sending
    its spans to an OTLP receiver here (exported every 100 ms)."""
    script = tmp_path / "saturn.yaml"
    script.write_text(yaml.safe_dump(saturn_script()))
    queue = f"vt-traces-{uuid.uuid4().hex[:8]}"
    database = connection.settings_dict
    previous_queue = celery_app.conf.task_default_queue
    settings.VANCETOPE_WORKER = "celery"
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    celery_app.conf.task_default_queue = queue
    with OtlpReceiver() as receiver:
        env = {
            **os.environ,
            "DATABASE_URL": (
                f"postgresql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
                f"{database['NAME']}"
            ),
            "VANCETOPE_TASK_QUEUE": queue,
            "VANCETOPE_LLM_SCRIPT": str(script),
            "VANCETOPE_WORKER": "celery",
            "VANCETOPE_VAR_DIR": str(tmp_path),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        worker = CeleryWorker(env, queue, "traced-worker", threads=4)
        try:
            yield receiver
        finally:
            worker.stop()
            celery_app.conf.task_default_queue = previous_queue


def test_an_arthur_marvin_worker_tree_is_one_trace_across_the_celery_hop(alice, traced_worker):
    # when a person asks arthur to study Saturn, and the tree runs on the Celery worker
    chat_id, marvin, workers = start_saturn(alice)

    # then, once the worker has exported its spans, the tree is one trace
    wait_for_tree_trace(traced_worker.received, chat_id, marvin, workers)
