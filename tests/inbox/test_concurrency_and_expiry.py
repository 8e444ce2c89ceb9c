"""Two answers at once (exactly one wins), the expiry sweep, and the one status writer."""

from __future__ import annotations

import importlib
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from inbox.models import InboxItem, InboxStatus, InboxTransition
from inbox.services import do_answer, expire_due_items
from inbox.tasks import expire_items_task
from inbox.transitions import TRANSITIONS, InboxCall, apply
from processes.models import PendingKind, PendingMessage
from tests.support.inbox import approval, question, user_messages
from tests.support.waiting import wait_until
from vancetope.errors import Conflict

pytestmark = pytest.mark.django_db(transaction=True)


def inbox_answers(process_id: int) -> list[PendingMessage]:
    rows = PendingMessage.objects.filter(process_id=process_id, kind=PendingKind.INBOX_ANSWER)
    return list(rows.order_by("seq"))


def test_two_answers_at_once_exactly_one_wins_and_is_delivered_once(alice, origin):
    item = approval(origin)
    start = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def answer(decision: str) -> None:
        start.wait()
        try:
            outcomes[decision] = do_answer(alice.user, item.public_id, {"decision": decision})
        except Conflict as exc:
            outcomes[decision] = exc
        finally:
            connection.close()

    # when
    threads = [threading.Thread(target=answer, args=(d,)) for d in ("approve", "reject")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    # then one answer is stored and delivered, the other is a 409
    conflicts = [d for d, outcome in outcomes.items() if isinstance(outcome, Conflict)]
    winners = [d for d, outcome in outcomes.items() if not isinstance(outcome, Conflict)]
    assert len(conflicts) == 1, outcomes
    assert len(winners) == 1, outcomes
    stored = InboxItem.objects.get(pk=item.pk)
    assert stored.answer == {"decision": winners[0]}
    [pending] = inbox_answers(origin.pk)
    assert pending.payload["answer"] == {"decision": winners[0]}
    calls = InboxTransition.objects.filter(item=item).values_list("call", flat=True)
    assert sorted(calls) == ["answer", "post"]


def test_an_expired_approval_is_answered_with_its_default_action_and_delivered(origin):
    now = timezone.now()
    item = approval(
        origin, expires_at=now - timedelta(seconds=1), default_action={"decision": "reject"}
    )
    # when
    assert expire_due_items(now) == 1
    # then
    stored = InboxItem.objects.get(pk=item.pk)
    assert stored.status == InboxStatus.EXPIRED
    assert stored.answer == {"decision": "reject"}
    assert stored.answered_by is None
    assert stored.origin_delivered is True
    [pending] = inbox_answers(origin.pk)
    assert pending.payload == {
        "text": "reject (the default on expiry)",
        "itemId": item.public_id,
        "answer": {"decision": "reject"},
    }
    seen = f"[inbox answer {item.public_id}]\nreject (the default on expiry)"
    wait_until(lambda: seen in user_messages(origin.pk))


def test_an_item_without_a_default_expires_unanswered_and_its_process_is_told(origin):
    now = timezone.now()
    item = question(origin, expires_at=now - timedelta(minutes=5))
    assert expire_due_items(now) == 1
    stored = InboxItem.objects.get(pk=item.pk)
    assert (stored.status, stored.answer) == (InboxStatus.EXPIRED, None)
    [pending] = inbox_answers(origin.pk)
    assert pending.payload["text"] == "expired with no answer"
    assert pending.payload["answer"] == {}


def test_items_not_yet_due_or_no_longer_open_are_left_alone(alice, origin):
    now = timezone.now()
    later = approval(origin, expires_at=now + timedelta(minutes=1))
    never = approval(origin)
    answered = approval(origin, expires_at=now - timedelta(minutes=1))
    do_answer(alice.user, answered.public_id, {"decision": "approve"})
    # when
    assert expire_due_items(now) == 0
    # then
    statuses = dict(InboxItem.objects.values_list("pk", "status"))
    assert statuses == {
        later.pk: InboxStatus.OPEN,
        never.pk: InboxStatus.OPEN,
        answered.pk: InboxStatus.ANSWERED,
    }
    # and once it is due, the later one expires (unanswered: it has no default)
    assert expire_due_items(now + timedelta(minutes=2)) == 1
    assert InboxItem.objects.get(pk=later.pk).status == InboxStatus.EXPIRED


def test_the_expiry_sweep_is_a_periodic_task_that_beat_runs_every_minute(origin):
    # The row comes from a data migration; transactional tests flush it, so run its function
    # again (it is idempotent) on the current schema.
    migration = importlib.import_module("inbox.migrations.0002_periodic_expiry")
    migration.create_sweep(django_apps, None)
    migration.create_sweep(django_apps, None)
    task = PeriodicTask.objects.get(task="inbox.expire_items")
    assert task.enabled
    assert (task.interval.every, task.interval.period) == (60, "seconds")
    approval(origin, expires_at=timezone.now() - timedelta(seconds=1))
    assert expire_items_task() == 1


def test_the_table_lets_only_open_items_change_and_a_refused_call_writes_nothing(alice, origin):
    assert {call: rule.allowed_from for call, rule in TRANSITIONS.items()} == {
        InboxCall.ANSWER: {"OPEN"},
        InboxCall.DISMISS: {"OPEN"},
        InboxCall.EXPIRE: {"OPEN"},
    }
    item = approval(origin)
    assert apply(item, InboxCall.DISMISS, by=alice.user)
    for call in (InboxCall.ANSWER, InboxCall.DISMISS, InboxCall.EXPIRE):
        with pytest.raises(Conflict, match=f"cannot {call.value} inbox item {item.public_id}"):
            apply(item, call)
    rows = InboxTransition.objects.filter(item=item).order_by("pk")
    assert [(r.call, r.from_status, r.to_status) for r in rows] == [
        ("post", "", "OPEN"),
        ("dismiss", "OPEN", "DISMISSED"),
    ]


def test_a_change_read_from_a_stale_row_loses_and_writes_nothing(alice, origin):
    item = approval(origin)
    stale = InboxItem.objects.get(pk=item.pk)
    assert apply(item, InboxCall.DISMISS, by=alice.user)
    # when: a writer that read the item while it was OPEN
    ran: list[int] = []
    moved = apply(stale, InboxCall.EXPIRE, then=lambda it: ran.append(it.pk) or {})
    # then
    assert moved is False
    assert ran == []
    assert InboxItem.objects.get(pk=item.pk).status == InboxStatus.DISMISSED
    assert InboxTransition.objects.filter(item=item).count() == 2
