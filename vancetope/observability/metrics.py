"""Prometheus metrics of the Brain's own events, counted where they happen.

Every label is bounded: engines, outcomes, providers, models, projects (their public ids),
tool names, kinds, reasons; never a process, session or run id. A call's `model` is one of the
configured names (`allow_models`: the settings llm.model, llm.fallbackModel and llm.models as a
process's settings resolved them, each provider's own default), else `other`, so whatever a
call names can never add a series. The counters live in this OS
process; with `PROMETHEUS_MULTIPROC_DIR` set (for the Brain and its Celery workers)
prometheus-client keeps them in files in that directory, and `/metrics`
(vancetope/metrics_endpoint.py) adds up every process's. `VANCETOPE_METRICS=false` turns
counting off (every function here then returns at once) and `/metrics` answers 404.

What the database knows (processes by status, pending messages, open inbox items) is not
counted here but read when `/metrics` is scraped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from django.conf import settings
from prometheus_client import Counter, Histogram

# Seconds: a zero-latency turn takes a few ms, a deep think's LLM call minutes.
TURN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)

TURNS = Counter(
    "vancetope_turns", "Turns of think processes, by engine and outcome", ["engine", "outcome"]
)
TURN_SECONDS = Histogram(
    "vancetope_turn_duration_seconds",
    "Wall-clock time of a turn (the engine's steer and its commit), by engine and outcome",
    ["engine", "outcome"],
    buckets=TURN_BUCKETS,
)
WAKE_LAG = Histogram(
    "vancetope_lane_wake_lag_seconds",
    "From a pending message's arrival to the start of the turn a woken lane runs on it",
    buckets=LAG_BUCKETS,
)
LEASE_RECOVERIES = Counter(
    "vancetope_lease_recoveries", "Lanes taken back from a dead or expired lease holder"
)
LLM_CALLS = Counter(
    "vancetope_llm_calls",
    "LLM calls, by provider, model, project and outcome (ok, error, interrupted)",
    ["provider", "model", "project", "outcome"],
)
LLM_TOKENS = Counter(
    "vancetope_llm_tokens",
    "Tokens of LLM calls, by provider, model, project and type (input, output)",
    ["provider", "model", "project", "type"],
)
TOOL_CALLS = Counter(
    "vancetope_tool_calls",
    "Tool calls, by tool, where it runs (server, client, mcp) and outcome (ok, failed, refused)",
    ["tool", "location", "outcome"],
)
INBOX_POSTED = Counter("vancetope_inbox_items_posted", "Inbox items posted, by kind", ["kind"])
INBOX_ANSWERED = Counter(
    "vancetope_inbox_items_answered", "Inbox items answered, by kind", ["kind"]
)
WEBHOOK_DELIVERIES = Counter(
    "vancetope_webhook_deliveries",
    "Inbound webhook deliveries, by outcome (accepted, replayed, filtered, refused) and reason",
    ["outcome", "reason"],
)
CRON_FIRINGS = Counter(
    "vancetope_cron_firings", "Cron firings, by outcome (ran, skipped, failed)", ["outcome"]
)
RUNS_FINISHED = Counter(
    "vancetope_runs_finished",
    "Runs that came to an end, by trigger and status",
    ["trigger", "status"],
)

_enabled: bool | None = None

# The model names the `model` label takes (at most MODEL_LABELS; any other is OTHER_MODEL).
MODEL_LABELS = 256
OTHER_MODEL = "other"
_models: set[str] = {""}
_models_lock = threading.Lock()


def allow_models(names: Iterable[str]) -> None:
    """Names that are configured (vancetope/config/llm.py, vancetope/llm/factory.py): a call
    of one of them is counted under its name."""
    fresh = [name for name in names if name not in _models]
    if not fresh:
        return
    with _models_lock:
        for name in fresh:
            if len(_models) >= MODEL_LABELS:
                break
            _models.add(name)


def model_label(model: str) -> str:
    """The `model` label of a call of `model`: its name if configured, else `other`."""
    return model if model in _models else OTHER_MODEL


def enabled() -> bool:
    global _enabled
    if _enabled is None:
        _enabled = bool(getattr(settings, "VANCETOPE_METRICS", True))
    return _enabled


def turn(engine: str, outcome: str, seconds: float) -> None:
    if enabled():
        TURNS.labels(engine, outcome).inc()
        TURN_SECONDS.labels(engine, outcome).observe(seconds)


def wake_lag(seconds: float) -> None:
    if enabled():
        WAKE_LAG.observe(max(0.0, seconds))


def lease_recovered(count: int = 1) -> None:
    if enabled() and count:
        LEASE_RECOVERIES.inc(count)


def llm_call(
    provider: str, model: str, project: str, outcome: str, input_tokens: int, output_tokens: int
) -> None:
    if enabled():
        model = model_label(model)
        LLM_CALLS.labels(provider, model, project, outcome).inc()
        if input_tokens:
            LLM_TOKENS.labels(provider, model, project, "input").inc(input_tokens)
        if output_tokens:
            LLM_TOKENS.labels(provider, model, project, "output").inc(output_tokens)


def tool_call(tool: str, location: str, outcome: str) -> None:
    if enabled():
        TOOL_CALLS.labels(tool, location or "unknown", outcome).inc()


def inbox_posted(kind: str) -> None:
    if enabled():
        INBOX_POSTED.labels(kind).inc()


def inbox_answered(kind: str) -> None:
    if enabled():
        INBOX_ANSWERED.labels(kind).inc()


def webhook_delivery(outcome: str, reason: str) -> None:
    if enabled():
        WEBHOOK_DELIVERIES.labels(outcome, reason).inc()


def cron_firing(outcome: str) -> None:
    if enabled():
        CRON_FIRINGS.labels(outcome).inc()


def run_finished(trigger: str, status: str) -> None:
    if enabled():
        RUNS_FINISHED.labels(trigger, status).inc()
