"""OpenTelemetry traces: a span per turn, per LLM call (GenAI semantic conventions), per tool
call and per child spawn; a process tree is one trace.

Tracing is on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (spans go over OTLP/HTTP, batched, from
a background thread; the `otel` extra installs the exporter) or when a test installs an
exporter of its own (`use_exporter`). Otherwise every helper here returns at once: no
OpenTelemetry import, no span object, nothing recorded.

How a tree becomes one trace: a process stores, when it is created, the W3C `traceparent` of
the span it was created under (`ThinkProcess.trace_parent`): for a child, its parent's spawn
span; for a process started from outside a turn (REST, a run), a `process` span of its own.
Every turn of the process is a child of that span, so the context crosses the Celery hop
with the process row, and nothing rides on the task message. A session's chat process stores
none: each of its turns is a trace of its own (with the trees it spawns).

The Brain's own tracer provider is kept here, not installed as OpenTelemetry's global one, so
that a library's spans do not land in the Brain's exporter unasked and tests can swap it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.conf import settings

from vancetope.redact import redact

log = logging.getLogger(__name__)

_lock = threading.Lock()
# None: not decided yet (decided on first use); False: off; else the tracer.
_tracer: Any = None
_provider: Any = None
_content: bool | None = None

Attributes = Mapping[str, str | int | float | bool | list[str]]


def _configure() -> Any:
    """The tracer, from the environment, the first time a span is asked for."""
    global _tracer, _provider
    with _lock:
        if _tracer is not None:
            return _tracer
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "") or os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""
        )
        if not endpoint:
            _tracer = False
            return _tracer
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            log.warning(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK and OTLP "
                "exporter are not installed (pip install 'vancetope[otel]'): no traces"
            )
            _tracer = False
            return _tracer
        # The exporter reads the endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*.
        _tracer = _install(BatchSpanProcessor(OTLPSpanExporter()))
        log.info("traces go to %s over OTLP/HTTP", endpoint)
        return _tracer


def _install(processor: Any) -> Any:
    global _provider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over this name.
    resource = Resource.create({"service.name": "vancetope"})
    if os.environ.get("OTEL_SERVICE_NAME"):
        resource = Resource.create()
    _provider = TracerProvider(resource=resource)
    _provider.add_span_processor(processor)
    return _provider.get_tracer("vancetope")


def use_exporter(exporter: Any | None) -> None:
    """Send spans to `exporter` as each ends (a test's InMemorySpanExporter); None: back to
    what the environment says."""
    global _tracer, _provider
    with _lock:
        if _provider is not None:
            _provider.shutdown()
        _tracer, _provider = None, None
        if exporter is not None:
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor

            _tracer = _install(SimpleSpanProcessor(exporter))


def tracer() -> Any:
    """The tracer, or False when tracing is off."""
    found = _tracer
    return _configure() if found is None else found


def enabled() -> bool:
    return bool(tracer())


def content_enabled() -> bool:
    """Whether prompts and completions go on LLM spans (VANCETOPE_TRACE_CONTENT)."""
    global _content
    if _content is None:
        _content = bool(getattr(settings, "VANCETOPE_TRACE_CONTENT", False))
    return _content


def _context_of(traceparent: str) -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": traceparent})


def traceparent_of(span: Any) -> str:
    """The W3C traceparent of `span` ("" for none)."""
    if span is None:
        return ""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, trace.set_span_in_context(span))
    return carrier.get("traceparent", "")


def current_traceparent() -> str:
    """The traceparent of the span current in this thread ("" without one, or when off)."""
    if not tracer():
        return ""
    from opentelemetry import trace

    span = trace.get_current_span()
    return traceparent_of(span) if span.get_span_context().is_valid else ""


def parent_for_new_process(attributes: Attributes) -> tuple[str, Any]:
    """The traceparent a new process stores (see the module's docstring): the current span's
    (a spawn), or else that of a `process` span started here, which the caller ends once the
    process has its id (`end`); ("", None) when tracing is off."""
    if not tracer():
        return "", None
    found = current_traceparent()
    if found:
        return found, None
    opened = start("create_agent", {"gen_ai.operation.name": "create_agent", **attributes})
    return traceparent_of(opened), opened


@contextmanager
def span(
    name: str, attributes: Attributes, *, parent: str = "", kind: str = "INTERNAL"
) -> Iterator[Any]:
    """A span around the block, current in it (spans started inside are its children); its
    parent is `parent` (a stored traceparent) when given, else the current span. Yields the
    span, or None when tracing is off. An exception leaving the block marks it an error."""
    found = tracer()
    if not found:
        yield None
        return
    from opentelemetry.trace import SpanKind

    context = _context_of(parent) if parent else None
    with found.start_as_current_span(
        name, context=context, kind=SpanKind[kind], attributes=dict(attributes)
    ) as opened:
        yield opened


def start(name: str, attributes: Attributes, *, kind: str = "INTERNAL") -> Any:
    """A span under the current one that the caller ends (`end`), never made current: for a
    call that yields to its caller (an LLM stream), where attaching a context would outlive
    the generator. None when tracing is off."""
    found = tracer()
    if not found:
        return None
    from opentelemetry.trace import SpanKind

    return found.start_span(name, kind=SpanKind[kind], attributes=dict(attributes))


def end(opened: Any, error: BaseException | None = None) -> None:
    """End a span of `start`; an error marks it failed, with its type."""
    if opened is None:
        return
    if error is not None:
        fail(opened, error)
    opened.end()


def fail(opened: Any, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    opened.set_attribute("error.type", type(error).__name__)
    opened.set_status(Status(StatusCode.ERROR, redact(str(error))[:300]))


def current_ids() -> tuple[str, str]:
    """(trace id, span id) in hex of the current span; ("", "") without one or when off."""
    if not tracer():
        return "", ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return "", ""
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"
