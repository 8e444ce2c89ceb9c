"""Helpers for the observability tests: spans as plain records (from the SDK's in-memory
exporter, or decoded from OTLP/HTTP requests a Celery worker sent), and samples read from a
`/metrics` page with prometheus-client's own parser."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from processes.actions import steer
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from processes.states import Status
from sessions_app.services import FingerprintData
from tests.support.marvin import worker
from tests.support.tenancy import Tenancy
from tests.support.waiting import settled, wait_until


@dataclass(frozen=True)
class SpanRecord:
    name: str
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root span
    attributes: dict[str, Any]


def from_sdk(spans: Iterable[Any]) -> list[SpanRecord]:
    """ReadableSpans of the SDK (InMemorySpanExporter.get_finished_spans())."""
    return [
        SpanRecord(
            span.name,
            f"{span.context.trace_id:032x}",
            f"{span.context.span_id:016x}",
            f"{span.parent.span_id:016x}" if span.parent is not None else "",
            {key: _plain(value) for key, value in (span.attributes or {}).items()},
        )
        for span in spans
    ]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _otlp_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_otlp_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


def from_otlp(body: bytes) -> list[SpanRecord]:
    """The spans of one OTLP/HTTP protobuf export request."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return [
        SpanRecord(
            span.name,
            span.trace_id.hex(),
            span.span_id.hex(),
            span.parent_span_id.hex(),
            {attribute.key: _otlp_value(attribute.value) for attribute in span.attributes},
        )
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


class OtlpReceiver:
    """An OTLP/HTTP trace endpoint on a free local port, keeping what it receives."""

    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver._lock:
                    receiver.spans.extend(from_otlp(body))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> list[SpanRecord]:
        with self._lock:
            return list(self.spans)


def named(spans: Iterable[SpanRecord], prefix: str) -> list[SpanRecord]:
    return [span for span in spans if span.name.startswith(prefix)]


def children(spans: Iterable[SpanRecord], parent: SpanRecord) -> Iterator[SpanRecord]:
    return (span for span in spans if span.parent_id == parent.span_id)


def turns_of(spans: Iterable[SpanRecord], process_id: str) -> list[SpanRecord]:
    return [
        span
        for span in spans
        if span.name.startswith("invoke_agent") and span.attributes["gen_ai.agent.id"] == process_id
    ]


def sample(page: str, name: str, **labels: str) -> float:
    """The value of the sample `name` with these labels (others ignored) summed, 0 if none."""
    total = 0.0
    for family in text_string_to_metric_families(page):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                total += found.value
    return total


# --- an arthur → marvin → workers tree, and what its trace must look like ---------------------


def saturn_script() -> list[dict[str, Any]]:
    """arthur starts marvin on its first call; marvin plans two workers and an aggregate."""
    create = {"name": "process_create", "arguments": {"recipe": "deep-think", "goal": "Saturn"}}
    tasks = [
        {"kind": "WORKER", "title": "Moons", "goal": "count the moons"},
        {"kind": "WORKER", "title": "Rings", "goal": "count the rings"},
        {"kind": "AGGREGATE", "title": "Report"},
    ]
    return [
        {"engine": "arthur", "match": "^study Saturn$", "times": 1, "tool_calls": [create]},
        {"engine": "arthur", "match": "^study Saturn$", "reply": "I started a deep think."},
        {"engine": "arthur", "match": r"^\[report from", "reply": "Saturn: 95 moons, 7 rings."},
        {
            "engine": "marvin",
            "step": "plan",
            "tool_calls": [{"name": "plan_tasks", "arguments": {"tasks": tasks}}],
        },
        *worker("count the moons", "95 moons."),
        *worker("count the rings", "7 rings."),
        {"engine": "marvin", "step": "aggregate", "reply": "Saturn: 95 moons, 7 rings."},
    ]


def start_saturn(tenancy: Tenancy) -> tuple[int, ThinkProcess, list[ThinkProcess]]:
    """A person asks arthur to study Saturn; the chat process, marvin and its workers once
    marvin is DONE."""
    session = create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="arthur",
    )
    assert session.chat_process_id is not None
    steer.send_chat(session.pk, "study Saturn")
    found = wait_until(
        lambda: ThinkProcess.objects.filter(parent_id=session.chat_process_id).first(), timeout=20
    )
    assert found is not None
    marvin = settled(found.pk, Status.CLOSED, timeout=30)
    workers = list(ThinkProcess.objects.filter(parent=marvin).order_by("pk"))
    settled(session.chat_process_id, Status.IDLE, timeout=20)
    return session.chat_process_id, marvin, workers


def wait_for_tree_trace(
    received: Callable[[], list[SpanRecord]],
    chat_id: int,
    marvin: ThinkProcess,
    workers: list[ThinkProcess],
    timeout: float = 30,
) -> None:
    """Wait until the spans received so far make the whole tree's trace, then check it once
    more so a failure names what is missing. A turn's span ends just after its commit (which
    already shows the process settled), and a Celery worker exports in batches."""

    def complete() -> bool:
        try:
            assert_one_tree_trace(received(), chat_id, marvin, workers)
        except (AssertionError, KeyError, ValueError):
            return False
        return True

    wait_until(complete, timeout=timeout)
    assert_one_tree_trace(received(), chat_id, marvin, workers)


def assert_one_tree_trace(
    spans: list[SpanRecord], chat_id: int, marvin: ThinkProcess, workers: list[ThinkProcess]
) -> None:
    """arthur's first turn is the root; marvin's turns hang under arthur's spawn span, each
    worker's under marvin's spawn of it; all in that one trace."""
    arthur_turns = turns_of(spans, f"tp_{chat_id}")
    [spawning] = [t for t in arthur_turns if named(children(spans, t), "spawn")]
    assert spawning.parent_id == ""
    trace = spawning.trace_id
    [spawn] = named(children(spans, spawning), "spawn deep-think")
    assert spawn.attributes["gen_ai.operation.name"] == "create_agent"
    assert spawn.attributes["gen_ai.agent.id"] == marvin.public_id
    assert marvin.trace_parent.split("-")[1:3] == [trace, spawn.span_id]
    marvin_turns = turns_of(spans, marvin.public_id)
    # its start, then the workers' reports (two reports pending at once are one turn)
    assert len(marvin_turns) >= 2
    assert {(t.trace_id, t.parent_id) for t in marvin_turns} == {(trace, spawn.span_id)}
    assert marvin_turns[0].attributes["vancetope.engine"] == "marvin"
    assert marvin_turns[0].attributes["gen_ai.agent.name"] == "deep-think"
    worker_spawns = [s for t in marvin_turns for s in named(children(spans, t), "spawn")]
    assert sorted(s.attributes["gen_ai.agent.id"] for s in worker_spawns) == sorted(
        w.public_id for w in workers
    )
    for child in workers:
        [its_spawn] = [
            s for s in worker_spawns if s.attributes["gen_ai.agent.id"] == child.public_id
        ]
        child_turns = turns_of(spans, child.public_id)
        assert child_turns
        assert {(t.trace_id, t.parent_id) for t in child_turns} == {(trace, its_spawn.span_id)}
        assert {t.attributes["vancetope.engine"] for t in child_turns} == {"frankie"}
        # each worker turn's LLM calls (act, then report) are its children, as GenAI spans
        calls = [c for t in child_turns for c in named(children(spans, t), "chat ")]
        assert {c.attributes["vancetope.step"] for c in calls} >= {"act", "report"}
        for call in calls:
            assert call.trace_id == trace
            assert call.attributes["gen_ai.operation.name"] == "chat"
            assert call.attributes["gen_ai.provider.name"] == "scripted"
            assert call.attributes["gen_ai.request.model"] == "scripted"
            assert call.attributes["gen_ai.usage.input_tokens"] > 0
            assert call.attributes["gen_ai.usage.output_tokens"] > 0
        finish = {tuple(c.attributes["gen_ai.response.finish_reasons"]) for c in calls}
        assert finish == {("stop",), ("tool_calls",)}
    # prompts and completions stay out unless VANCETOPE_TRACE_CONTENT is on
    assert not any("gen_ai.input.messages" in s.attributes for s in spans)
