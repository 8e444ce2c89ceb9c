"""Fixtures of the observability tests: spans kept in memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.observability import SpanRecord, from_sdk
from vancetope.observability import tracing


@pytest.fixture
def spans() -> Iterator[Callable[[], list[SpanRecord]]]:
    """Tracing on, into memory, for this test: call it for the spans ended so far."""
    exporter = InMemorySpanExporter()
    tracing.use_exporter(exporter)
    try:
        yield lambda: from_sdk(exporter.get_finished_spans())
    finally:
        tracing.use_exporter(None)
