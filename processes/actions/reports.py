"""Parent reports: a child that ends or blocks tells its parent."""

from __future__ import annotations

import logging
from typing import Any

from engines.registry import get_engine
from processes import signals
from processes.actions.pending import deliver
from processes.models import ConversationMessage, PendingKind, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status
from vancetope.dispatch import send_robust_logged

log = logging.getLogger(__name__)

# Statuses (or close reasons) a parent hears about, as the event name its engine summarises.
REPORTED_TO_PARENT = {Status.BLOCKED, CloseReason.DONE, CloseReason.STOPPED, CloseReason.FAILED}


def summary_of(process: ThinkProcess, event: str) -> str:
    """What the process's engine says of it at `event` (DONE, BLOCKED, …), in Markdown: what
    its parent would read (a run's result, for the person it works for)."""
    engine = get_engine(process.think_engine)
    if engine is None:
        return ""
    return engine.summarize_for_parent(process, event).human_summary


def last_result(process: ThinkProcess) -> str | None:
    """What the process has to show for itself (what another tool reads of it): once it is
    settled (CLOSED, BLOCKED), what its engine reports of it (what a parent or a run's owner
    reads); before, its last assistant message, if any."""
    if process.status == Status.CLOSED and process.close_reason:
        return summary_of(process, process.close_reason)
    if process.status == Status.BLOCKED:
        return summary_of(process, Status.BLOCKED)
    return last_reply(process) or None


def last_reply(process: ThinkProcess) -> str:
    """The process's last assistant message that no undo took back ("" without one)."""
    last = (
        ConversationMessage.objects.filter(
            process_id=process.pk, role="assistant", undone_at__isnull=True
        )
        .order_by("-index")
        .values_list("content", flat=True)
        .first()
    )
    return last or ""


def report_to_parent(
    process: ThinkProcess, status: str, reason: str, *, delivered: bool = False
) -> PendingMessage | None:
    """A child reached DONE, BLOCKED, STOPPED or FAILED: its engine's summary becomes a
    PARENT_REPORT pending message of the parent, which wakes it. A report to a PAUSED or
    SUSPENDED parent waits for its resume; a CLOSED parent hears nothing. The
    `process_settled` signal is sent first, whatever the status (processes/signals.py).
    `delivered`: the report went with the commit that ended the child's run
    (`deliver_with_commit`); only the signal is sent."""
    # A receiver's failure is its own: the process and its parent go on.
    send_robust_logged(
        signals.process_settled,
        ThinkProcess,
        process.public_id,
        process=process,
        status=status,
        reason=reason,
    )
    if delivered:
        return None
    payload = parent_report(process, status, reason)
    if payload is None or process.parent_id is None:
        return None
    message = deliver(process.parent_id, PendingKind.PARENT_REPORT, payload)
    if message is None:
        log.info(
            "%s: parent tp_%s is gone or closed; report dropped",
            process.public_id,
            process.parent_id,
        )
    return message


def deliver_with_commit(process: ThinkProcess) -> bool:
    """Inside the commit that ends a child's run (the lane's): its report, if its parent is
    to hear one, stored in that transaction, so that no crash can keep a child's end and its
    report apart. True if the parent was to hear one (delivered, or dropped: parent closed)."""
    payload = parent_report(process, process.status, process.close_reason)
    if payload is None:
        return False
    assert process.parent_id is not None
    deliver(process.parent_id, PendingKind.PARENT_REPORT, payload)
    return True


def parent_report(process: ThinkProcess, status: str, reason: str) -> dict[str, Any] | None:
    """The payload of the report its parent gets of `process` at this status (None if the
    parent hears nothing: no parent, or a status it is not told of)."""
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
    return payload
