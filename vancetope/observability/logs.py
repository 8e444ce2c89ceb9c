"""What this thread is working on (a process's turn: its process, session, run, project, engine),
and JSON log lines that carry it.

The lane binds the facts of the process it drives (`bound`) for as long as it drives it; the
LLM and tool metrics read the project from them, and `ContextFilter` puts them, with the
current trace and span ids, on every log record. `VANCETOPE_LOG_FORMAT=json` (vancetope/
settings.py) installs the filter and `JsonFormatter` on the console handler: one JSON object
per line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vancetope.observability import tracing
from vancetope.redact import redact


@dataclass(frozen=True)
class Facts:
    """Who the work in this thread is for; "" where not known."""

    process: str = ""  # tp_12
    session: str = ""  # sess_3
    run: str = ""  # run_7
    project: str = ""  # the project's slug
    engine: str = ""
    recipe: str = ""


NOTHING = Facts()
_facts: ContextVar[Facts] = ContextVar("vancetope_facts", default=NOTHING)


def facts() -> Facts:
    return _facts.get()


@contextmanager
def bound(found: Facts) -> Iterator[Facts]:
    """`found` are this thread's facts while the block runs (a lane's pool thread runs many
    processes in turn: each drive sets its own and puts back what was there)."""
    token = _facts.set(found)
    try:
        yield found
    finally:
        _facts.reset(token)


# The record attributes the filter sets (a LogRecord's own `process` is the OS pid).
FIELDS = ("vt_process", "vt_session", "vt_run", "trace_id", "span_id")
# Their keys in a JSON line.
KEYS = ("process", "session", "run", "trace_id", "span_id")


class ContextFilter(logging.Filter):
    """Adds the thread's facts and the current trace and span ids to each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = _facts.get()
        record.vt_process = found.process
        record.vt_session = found.session
        record.vt_run = found.run
        record.trace_id, record.span_id = tracing.current_ids()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, message, the ids the
    filter set (those known), and the traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, key in zip(FIELDS, KEYS, strict=True):
            value = getattr(record, name, "")
            if value:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


# The scheduler's periodic sweeps: each runs every few seconds, and its success is not news.
ROUTINE_TASKS = frozenset(
    {
        "processes.sweep_lanes",
        "sessions_app.sweep_idle_sessions",
        "inbox.expire_items",
        "triggers.prune_trigger_events",
    }
)


class RedactFilter(logging.Filter):
    """On the console handler: a record's message and its traceback with the credentials of
    every URL in them replaced (vancetope/redact.py), whoever logged it (httpx logs each
    request's URL, an SDK's error names it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "@" in message:
            record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and "@" in record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class RoutineTaskFilter(logging.Filter):
    """On Celery's task trace logger: a routine sweep that succeeded is logged at DEBUG, so
    the console shows it only with LOG_LEVEL=DEBUG; its failure stays an ERROR."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        name = args.get("name") if isinstance(args, dict) else None
        if record.levelno != logging.INFO or name not in ROUTINE_TASKS:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
