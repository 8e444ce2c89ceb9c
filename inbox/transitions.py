"""The one writer of an inbox item's status, and its table.

| call    | allowed in | result    |
| ------- | ---------- | --------- |
| post    | (new item) | OPEN      |
| answer  | OPEN       | ANSWERED  |
| dismiss | OPEN       | DISMISSED |
| expire  | OPEN       | EXPIRED   |

`apply` checks the call against the table (409, nothing changed), writes the change by
compare-and-swap on the status the item was read in, runs the caller's `then` (the delivery of
an answer) only if it won, records an InboxTransition row and stores the `inbox-item` event for
every open session of the item's user, all in one transaction. Nothing else writes an item's
status.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from django.db import transaction

from inbox.models import InboxItem, InboxStatus, InboxTransition
from inbox.presenters import item_data
from protocol.outbound import InboxItemEvent, event
from sessions_app.events import emit_event
from sessions_app.models import Session, SessionStatus
from vancetope import statemachine
from vancetope.statemachine import Rule


class InboxCall(StrEnum):
    POST = "post"
    ANSWER = "answer"
    DISMISS = "dismiss"
    EXPIRE = "expire"


OPEN_ONLY = frozenset({InboxStatus.OPEN})
TRANSITIONS: dict[InboxCall, Rule[InboxStatus]] = {
    InboxCall.ANSWER: Rule(OPEN_ONLY, InboxStatus.ANSWERED),
    InboxCall.DISMISS: Rule(OPEN_ONLY, InboxStatus.DISMISSED),
    InboxCall.EXPIRE: Rule(OPEN_ONLY, InboxStatus.EXPIRED),
}


def check(call: InboxCall, item: InboxItem) -> Rule[InboxStatus]:
    return statemachine.check(TRANSITIONS, call, item.status, f"inbox item {item.public_id}")


def announce(item: InboxItem) -> None:
    """The `inbox-item` event, stored for every open session of the item's user (in session
    order, so concurrent writers lock the sessions in the same order)."""
    data = event(InboxItemEvent.model_validate({"item": item_data(item)}))
    sessions = Session.objects.filter(owner_id=item.user_id, status=SessionStatus.OPEN)
    for session_id in sessions.order_by("pk").values_list("pk", flat=True):
        emit_event(session_id, *data)


def post(item: InboxItem) -> InboxItem:
    """Store a new item OPEN, with its first record row, and announce it."""
    item.status = InboxStatus.OPEN
    with transaction.atomic():
        item.save()
        InboxTransition.objects.create(
            item=item, call=InboxCall.POST, from_status="", to_status=InboxStatus.OPEN
        )
        announce(item)
    return item


def apply(
    item: InboxItem,
    call: InboxCall,
    *,
    by: Any = None,
    changes: dict[str, Any] | None = None,
    then: Callable[[InboxItem], dict[str, Any]] | None = None,
    detail: str = "",
) -> bool:
    """Move the item from the status it was read in by `call`, with `changes` written in the
    same statement; then `then(item)` (the item as changed), whose changes are written too.
    False, and nothing written or run, if another caller moved the item first."""
    rule = check(call, item)
    from_status = item.status
    to = rule.target()
    written: dict[str, Any] = {**(changes or {}), "status": to}
    with transaction.atomic():
        if not statemachine.move(item, from_status, written):
            return False
        more = then(item) if then is not None else {}
        if more:
            InboxItem.objects.filter(pk=item.pk).update(**more)
            for name, value in more.items():
                setattr(item, name, value)
        InboxTransition.objects.create(
            item=item, call=call, from_status=from_status, to_status=to, by=by, detail=detail
        )
        announce(item)
    return True
