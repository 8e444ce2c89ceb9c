"""Parent reports: a child that ends or blocks tells its parent (ARCHITECTURE §4, §5a)."""

from __future__ import annotations

import logging
from typing import Any

from engines.registry import get_engine
from processes.actions.pending import deliver
from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status

log = logging.getLogger(__name__)

# Statuses (or close reasons) a parent hears about, as the event name its engine summarises.
REPORTED_TO_PARENT = {Status.BLOCKED, CloseReason.DONE, CloseReason.STOPPED, CloseReason.FAILED}


def report_to_parent(process: ThinkProcess, status: str, reason: str) -> PendingMessage | None:
    """A child reached DONE, BLOCKED, STOPPED or FAILED: its engine's summary becomes a
    PARENT_REPORT pending message of the parent, which wakes it. A report to a PAUSED or
    SUSPENDED parent waits for its resume; a CLOSED parent hears nothing."""
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
