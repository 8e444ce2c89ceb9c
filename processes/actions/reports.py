"""Parent reports: a child that ends or blocks tells its parent (ARCHITECTURE §4, §5a)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from engines.registry import get_engine
from processes.actions.pending import deliver
from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status

log = logging.getLogger(__name__)

# Statuses (or close reasons) a parent hears about, as the event name its engine summarises.
REPORTED_TO_PARENT = {Status.BLOCKED, CloseReason.DONE, CloseReason.STOPPED, CloseReason.FAILED}

# Called with (process, status, close reason) whenever a lifecycle call or a lane's run has
# left a process in a status of rest (IDLE, BLOCKED, CLOSED, …), before its parent hears.
# Other apps register here in their AppConfig.ready (triggers/ ends its runs this way), so
# processes/ imports none of them. A listener must cost no query for processes it ignores:
# the chat turn's statements are counted (tests/infra/test_turn_queries.py).
SettledListener = Callable[[ThinkProcess, str, str], None]
_settled_listeners: list[SettledListener] = []


def on_process_settled(listener: SettledListener) -> None:
    """Register `listener` (once; a second registration of the same function is ignored)."""
    if listener not in _settled_listeners:
        _settled_listeners.append(listener)


def report_to_parent(process: ThinkProcess, status: str, reason: str) -> PendingMessage | None:
    """A child reached DONE, BLOCKED, STOPPED or FAILED: its engine's summary becomes a
    PARENT_REPORT pending message of the parent, which wakes it. A report to a PAUSED or
    SUSPENDED parent waits for its resume; a CLOSED parent hears nothing. The settled
    listeners are told first, whatever the status."""
    for listener in _settled_listeners:
        try:
            listener(process, status, reason)
        except Exception:
            # A listener's failure is its own: the process and its parent go on.
            log.exception("%s: a settled listener failed", process.public_id)
    event = reason if status == Status.CLOSED else status
    if process.parent_id is None or event not in REPORTED_TO_PARENT:
        return None
    engine = get_engine(process.think_engine)
    if engine is None:
        return None
    summary = engine.summarize_for_parent(process, event)
    text = summary.human_summary
    payload: dict[str, Any] = {
        "childId": process.public_id,
        "engine": process.think_engine,
        "event": event,
        "payload": summary.payload,
    }
    if event in {CloseReason.FAILED, Status.BLOCKED} and process.last_error:
        # Why it failed (or waits for its provider) reaches the parent whatever the engine's
        # summary says.
        payload["error"] = process.last_error
        if process.last_error not in text:
            text = f"{text}\n\nError: {process.last_error}"
    payload["text"] = text
    message = deliver(process.parent_id, PendingKind.PARENT_REPORT, payload)
    if message is None:
        log.info(
            "%s: parent tp_%s is gone or closed; report dropped",
            process.public_id,
            process.parent_id,
        )
    return message
