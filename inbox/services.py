"""The inbox's domain operations: post an item, answer, dismiss, expire; and what a user sees.

An answer goes to the process that posted the item as an INBOX_ANSWER pending message (which
wakes it), exactly once: only the caller whose compare-and-swap moved the item out of OPEN
delivers it, in the same transaction. An item outlives its process: an answer to an item whose
process is CLOSED or gone is stored with `origin_delivered=False` and the reason; nothing waits
for it. An item no process posted (a system client's: the brain linker's APPROVAL, whose
origin is its run) has its answer settled by the receiver of the `origin_answered` signal
whose item it is (inbox/signals.py), in the answer's transaction; the inbox imports none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from inbox import signals, transitions
from inbox.answers import SHAPES, checked_answer, rendered
from inbox.models import InboxItem, InboxKind, InboxStatus
from inbox.transitions import InboxCall
from processes.actions.pending import deliver
from processes.actions.uncertain import settle_uncertain_call
from processes.actions.undo import TakenBack
from processes.models import PendingKind, ThinkProcess
from vancetope.dispatch import send_robust_logged
from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.ids import get_by_public_id, parse_public_id
from vancetope.observability import metrics

TITLE_MAX = 200
# Items one expiry sweep handles; the next sweep takes the rest.
EXPIRE_BATCH = 500
EXPIRED_UNANSWERED = "expired with no answer"


@dataclass(frozen=True)
class Answered:
    item: InboxItem
    # Whether the answer reached the origin process (else item.origin_note says why).
    delivered: bool


# --- reading -------------------------------------------------------------------------------------


def visible_items(user: Any) -> QuerySet[InboxItem]:
    """The user's own items (another user's, in any tenant, are never seen)."""
    if not user.is_authenticated:
        return InboxItem.objects.none()
    return InboxItem.objects.filter(user=user).select_related("project", "answered_by")


def get_visible_item(user: Any, item_id: str) -> InboxItem:
    return get_by_public_id(visible_items(user), "inb", item_id, "inbox item")


def filtered_items(
    user: Any, *, status: str | None = None, kind: str | None = None, process: str | None = None
) -> QuerySet[InboxItem]:
    """The user's items, newest first, by status, kind and process (tp_N: the one that posted
    it or asked it through its parent, also one whose row is gone); a value that names none
    of them is a 400, an empty one (`?kind=`) too: only an absent filter (None) is no
    filter."""
    rows = visible_items(user)
    if status is not None:
        if status not in InboxStatus.values:
            raise BadRequest.naming("status", f"must be one of {', '.join(InboxStatus.values)}")
        rows = rows.filter(status=status)
    if kind is not None:
        if kind not in InboxKind.values:
            raise BadRequest.naming("kind", f"must be one of {', '.join(InboxKind.values)}")
        rows = rows.filter(kind=kind)
    if process is not None:
        try:
            pk = parse_public_id("tp", process, "process")
        except NotFound as exc:
            raise BadRequest.naming(
                "process", f"must be a process id like tp_12, not {process!r}"
            ) from exc
        rows = rows.filter(Q(origin_public_id=f"tp_{pk}") | Q(asked_by=f"tp_{pk}"))
    return rows.order_by("-pk")


# --- posting -------------------------------------------------------------------------------------


def post_item(
    process: ThinkProcess,
    kind: str,
    title: str,
    body: str,
    options: list[str] | None = None,
    expires_at: datetime | None = None,
    default_action: dict[str, Any] | None = None,
    user: Any = None,
    answer_as_steer: bool = False,
    asked_by: str = "",
    about: str = "",
) -> InboxItem:
    """A new OPEN item of the process's session's owner (or of `user`: the person a system
    run works for), announced to their open sessions. A kind, title, option or default
    action that does not fit is a 400 naming it. `answer_as_steer`: asked in a root
    process's parent's place (inbox/asking.py)."""
    session = process.session
    item = _checked_item(kind, title, body, options, expires_at, default_action)
    item.answer_as_steer = answer_as_steer
    item.about = about
    item.asked_by = asked_by if asked_by != process.public_id else ""
    item.project_id = session.project_id
    item.user_id = user.pk if user is not None else session.owner_id
    item.origin_process = process
    item.origin_public_id = process.public_id
    return _post(item)


def post_system_item(
    project: Any,
    user: Any,
    origin_id: str,
    kind: str,
    title: str,
    body: str,
    *,
    options: list[str] | None = None,
) -> InboxItem:
    """A new OPEN item of `user` that no process posted: a system client's (the brain
    linker's, `origin_id` its run). Its answer goes to the receiver of the `origin_answered`
    signal whose item it is (inbox/signals.py)."""
    item = _checked_item(kind, title, body, options, None, None)
    item.project_id = project.pk
    item.user_id = user.pk
    item.origin_public_id = origin_id
    return _post(item)


def _checked_item(
    kind: str,
    title: str,
    body: str,
    options: list[str] | None,
    expires_at: datetime | None,
    default_action: dict[str, Any] | None,
) -> InboxItem:
    if kind not in InboxKind.values:
        raise BadRequest.naming(
            "kind", f"must be one of {', '.join(InboxKind.values)}, not {kind!r}"
        )
    title = title.strip()
    if not title or len(title) > TITLE_MAX:
        raise BadRequest.naming("title", f"must be 1 to {TITLE_MAX} characters")
    options = [str(option) for option in options or []]
    if options and kind != InboxKind.QUESTION:
        raise BadRequest.naming("options", "only a QUESTION has options")
    if any(not option.strip() for option in options) or len(set(options)) != len(options):
        raise BadRequest.naming("options", "must be distinct and not empty")
    if default_action is not None:
        if kind not in SHAPES:
            raise BadRequest.naming("defaultAction", f"an {kind} item takes no answer")
        default_action = checked_answer(kind, options, default_action, where="defaultAction")
    return InboxItem(
        kind=kind,
        title=title,
        body=body,
        options=options,
        expires_at=expires_at,
        default_action=default_action,
    )


def _post(item: InboxItem) -> InboxItem:
    transitions.post(item)
    metrics.inbox_posted(item.kind)
    # A receiver's failure is its own: the item stays posted.
    send_robust_logged(signals.item_posted, InboxItem, item.public_id, item=item)
    return item


# --- answering -----------------------------------------------------------------------------------


def check_answer(item: InboxItem, answer: Any) -> dict[str, Any]:
    """The answer as it will be stored: 409 unless the item is OPEN and takes an answer, 400
    naming the field when its shape does not fit the item's kind."""
    transitions.check(InboxCall.ANSWER, item)
    if item.kind not in SHAPES:
        raise Conflict(
            f"inbox item {item.public_id} is {item.kind}: there is nothing to answer; dismiss it"
        )
    return checked_answer(item.kind, list(item.options or []), answer)


def do_answer(user: Any, item_id: str, answer: Any) -> Answered:
    """Answer one of the user's own items (another's is a 404)."""
    item = get_visible_item(user, item_id)
    return answer_item(item, answer, by=user)


def answer_item(item: InboxItem, answer: Any, *, by: Any) -> Answered:
    """Store the answer and deliver it to the origin process, once: a second answer, or one
    that lost the race to another, is a 409 and changes nothing. The operators' admin answers
    through here too (any item)."""
    checked = check_answer(item, answer)
    text = rendered(item.kind, checked)
    moved = transitions.apply(
        item,
        InboxCall.ANSWER,
        by=by,
        changes={"answer": checked, "answered_by": by, "answered_at": timezone.now()},
        then=_delivering(checked, text, by),
        detail=text,
    )
    if not moved:
        now = InboxItem.objects.get(pk=item.pk).status
        raise Conflict(f"cannot answer inbox item {item.public_id}: it is {now}")
    metrics.inbox_answered(item.kind)
    return Answered(item, delivered=bool(item.origin_delivered))


def _delivering(
    answer: dict[str, Any], text: str, by: Any = None
) -> Callable[[InboxItem], dict[str, Any]]:
    """The delivery of this answer, run by the transition that wins (see transitions.apply)."""
    return lambda item: _deliver(item, answer, text, by)


def _deliver(item: InboxItem, answer: dict[str, Any], text: str, by: Any) -> dict[str, Any]:
    """The answer as an INBOX_ANSWER pending message of the origin process (waking it; a
    STEER for an item asked in a root process's parent's place, inbox/asking.py), or to the
    receiver of a process-less item's origin; the item's changes that say whether it got
    there."""
    payload = {"text": text, "itemId": item.public_id, "answer": answer}
    if item.about and answer:
        # The Brain asked about a call its stop left uncertain: the answer settles the call.
        settled = settle_uncertain_call(item.about, approve=answer.get("decision") == "approve")
        return {"origin_delivered": not settled, "origin_note": settled}
    if item.origin_process_id is None and answer:
        notes = signals.origin_answered.send(InboxItem, item=item, answer=answer, by=by)
        note = next((found for _receiver, found in notes if found is not None), None)
        if note is not None:
            return {"origin_delivered": True, "origin_note": note}
    if item.origin_process_id is not None:
        kind = PendingKind.STEER if item.answer_as_steer else PendingKind.INBOX_ANSWER
        if deliver(item.origin_process_id, kind, payload) is not None:
            return {"origin_delivered": True, "origin_note": ""}
    return {"origin_delivered": False, "origin_note": _why_undelivered(item)}


def _why_undelivered(item: InboxItem) -> str:
    origin = (
        ThinkProcess.objects.filter(pk=item.origin_process_id or 0)
        .values("status", "close_reason")
        .first()
    )
    if origin is None:
        return (
            f"{item.origin_public_id} no longer exists: the answer is stored, no process reads it"
        )
    reason = f" ({origin['close_reason']})" if origin["close_reason"] else ""
    return (
        f"{item.origin_public_id} is {origin['status']}{reason}: the answer is stored, "
        "no process reads it"
    )


# --- dismissing and expiring ---------------------------------------------------------------------


def dismiss_item(user: Any, item_id: str) -> InboxItem:
    """Put one of the user's OPEN items away unanswered; the origin process is not told."""
    return dismiss(get_visible_item(user, item_id), by=user)


def dismiss(item: InboxItem, *, by: Any) -> InboxItem:
    """Put an OPEN item away (409 otherwise); the admin dismisses any item through here."""
    if not transitions.apply(item, InboxCall.DISMISS, by=by):
        now = InboxItem.objects.get(pk=item.pk).status
        raise Conflict(f"cannot dismiss inbox item {item.public_id}: it is {now}")
    return item


def expire_due_items(now: datetime | None = None) -> int:
    """Every OPEN item whose `expires_at` has passed goes EXPIRED. One with a default action
    is answered with it (stored and delivered as an answer); one without tells its process
    that it expired with no answer, so a process waiting for it does not wait for ever.
    Returns how many expired."""
    now = now or timezone.now()
    due = (
        InboxItem.objects.filter(status=InboxStatus.OPEN, expires_at__lte=now)
        .select_related("project", "answered_by")
        .order_by("expires_at", "pk")[:EXPIRE_BATCH]
    )
    expired = 0
    for item in due:
        answer = item.default_action
        if answer:
            text = f"{rendered(item.kind, answer)} (the default on expiry)"
            changes = {"answer": answer, "answered_at": now}
        else:
            text, changes = EXPIRED_UNANSWERED, {}
        expired += transitions.apply(
            item,
            InboxCall.EXPIRE,
            changes=changes,
            then=_delivering(answer or {}, text),
            detail=text,
        )
    return expired


# --- undo ----------------------------------------------------------------------------------------


def take_back_items(process: ThinkProcess, since: datetime, by: Any) -> TakenBack:
    """An undo of the process's turn (processes/actions/undo.py): the items it posted since
    the turn began that are still OPEN are dismissed; answered ones stay, and say so."""
    taken = TakenBack()
    posted = InboxItem.objects.filter(origin_process_id=process.pk, created_at__gte=since)
    for item in posted.select_related("project").order_by("pk"):
        if item.status == InboxStatus.OPEN and transitions.apply(
            item, InboxCall.DISMISS, by=by, detail=f"the turn of {process.public_id} was undone"
        ):
            taken.dismissed.append(item.public_id)
            continue
        item.refresh_from_db(fields=["status"])
        if item.status == InboxStatus.ANSWERED:
            text = f"{item.public_id} was answered already; the answer stays"
            taken.not_undone.append({"kind": "inbox-item", "id": item.public_id, "text": text})
    return taken
