"""A root process's question reaches its person.

A process that asks (marvin's USER_INPUT node, a vogon approval or a worker's question passed
up, an arthur worker with no inbox of its own) goes BLOCKED, and its engine's summary for the
parent carries the question (`payload.question`; `payload.approval` for an approval). A nested
process's parent reads it in its report and asks the person (arthur posts an inbox item). A
root process has no parent: the Brain posts the item in the parent's place, for the owner of
the process's session, and the answer reaches the process as a steer, as a parent passes one
on (inbox/services.py `_deliver`). Answered exactly once, as every item is.
"""

from __future__ import annotations

import logging

from engines.registry import get_engine
from inbox import transitions
from inbox.models import InboxItem, InboxKind, InboxStatus
from inbox.services import TITLE_MAX, post_item
from inbox.transitions import InboxCall
from processes.models import ThinkProcess
from processes.states import Status
from vancetope.tools.models import ToolCall
from vancetope.tools.replay import question_of

log = logging.getLogger(__name__)


def ask_for_root(process: ThinkProcess) -> InboxItem | None:
    """The item asked for a BLOCKED root process's question, or None: it has a parent (who
    asks), it is a system run's (whose run asks its owner), it has no question, or an OPEN
    item of that question exists already (it blocked again). An OPEN item it asked before, of
    another question, is dismissed."""
    if process.parent_id is not None or process.status != Status.BLOCKED:
        return None
    if process.session.system:
        # A system run's process: its run asks the run's owner (triggers/runs/system.py
        # `ask_owner`), the person it works for, not the system session's owner.
        return None
    engine = get_engine(process.think_engine)
    if engine is None:
        return None
    payload = engine.summarize_for_parent(process, Status.BLOCKED).payload
    question = str(payload.get("question") or "").strip()
    if not question:
        return None
    asked = InboxItem.objects.filter(
        origin_process_id=process.pk, answer_as_steer=True, status=InboxStatus.OPEN
    )
    if any(item.body == question for item in asked):
        return None
    for stale in asked.select_related("project"):
        # It asks something else now (an answer came in words, it asks again): the old
        # question is put away, saying why, so no answer goes to a question nobody asks.
        transitions.apply(
            stale, InboxCall.DISMISS, detail=f"{process.public_id} asks something else now"
        )
    approval = bool(payload.get("approval"))
    kind = InboxKind.APPROVAL if approval else InboxKind.QUESTION
    verb = "asks for approval" if approval else "asks"
    title = f"{process.public_id} {verb}: {question.splitlines()[0]}"
    if len(title) > TITLE_MAX:
        title = title[: TITLE_MAX - 1] + "…"
    item = post_item(process, kind, title, question, answer_as_steer=True)
    log.info("%s asked its person: %s", process.public_id, item.public_id)
    return item


def ask_about_call(process: ThinkProcess, call: ToolCall) -> InboxItem | None:
    """The APPROVAL a process asks of its person about a call its Brain's stop left uncertain
    (processes/actions/uncertain.py), or None when an OPEN item asks about it already (its
    turn was retried again before the answer)."""
    if InboxItem.objects.filter(about=call.public_id, status=InboxStatus.OPEN).exists():
        return None
    title = f"{process.public_id} asks: run {call.tool} again?"
    if len(title) > TITLE_MAX:
        title = title[: TITLE_MAX - 1] + "…"
    item = post_item(process, InboxKind.APPROVAL, title, question_of(call), about=call.public_id)
    log.info("%s asked about %s: %s", process.public_id, call.public_id, item.public_id)
    return item
