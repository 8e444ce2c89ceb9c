"""The inbox's services: posting, answering once, the answer reaching its process, scoping."""

from __future__ import annotations

import pytest

from engines.messages import InboxAnswer, parse
from inbox.models import InboxItem, InboxStatus, InboxTransition
from inbox.services import (
    answer_item,
    dismiss_item,
    do_answer,
    get_visible_item,
    post_item,
    visible_items,
)
from processes.actions.lifecycle import stop_process
from processes.actions.sessions import close_session
from processes.models import PendingKind, PendingMessage, ThinkProcess
from sessions_app.models import SessionEvent
from tests.support.inbox import approval, question, user_messages
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.errors import BadRequest, Conflict, NotFound

pytestmark = pytest.mark.django_db(transaction=True)


def inbox_answers(process_id: int) -> list[PendingMessage]:
    rows = PendingMessage.objects.filter(process_id=process_id, kind=PendingKind.INBOX_ANSWER)
    return list(rows.order_by("seq"))


def item_events(session_id: int) -> list[dict]:
    rows = SessionEvent.objects.filter(session_id=session_id, event="inbox-item").order_by("seq")
    return [row.data["item"] for row in rows]


# --- posting -------------------------------------------------------------------------------------


def test_a_posted_item_is_open_recorded_and_announced_to_every_open_session_of_its_user(
    alice, bob, session, origin
):
    other = open_session(alice)
    closed = open_session(alice)
    close_session(closed.pk)
    bobs = open_session(bob)
    # when
    item = approval(origin)
    # then
    stored = InboxItem.objects.get(pk=item.pk)
    assert stored.status == InboxStatus.OPEN
    assert (stored.user_id, stored.project_id) == (alice.user.pk, alice.project.pk)
    assert (stored.origin_process_id, stored.origin_public_id) == (origin.pk, origin.public_id)
    assert stored.origin_delivered is None
    [row] = InboxTransition.objects.filter(item=item)
    assert (row.call, row.from_status, row.to_status) == ("post", "", "OPEN")
    for open_one in (session, other):
        [announced] = item_events(open_one.pk)
        assert announced["id"] == item.public_id
        assert announced["status"] == "OPEN"
        assert announced["originProcessId"] == origin.public_id
        assert announced["projectId"] == alice.project_id
    assert item_events(closed.pk) == []
    assert item_events(bobs.pk) == []


@pytest.mark.parametrize(
    ("kind", "title", "options", "default_action", "field"),
    [
        ("REMINDER", "t", None, None, "kind"),
        ("APPROVAL", "   ", None, None, "title"),
        ("APPROVAL", "x" * 201, None, None, "title"),
        ("APPROVAL", "t", ["yes", "no"], None, "options"),
        ("QUESTION", "t", ["a", "a"], None, "options"),
        ("APPROVAL", "t", None, {"decision": "maybe"}, "defaultAction.decision"),
        ("QUESTION", "t", ["a"], {"choice": "b"}, "defaultAction.choice"),
        ("OUTPUT_TEXT", "t", None, {"text": "x"}, "defaultAction"),
    ],
)
def test_an_item_that_breaks_the_rules_is_refused_naming_the_field(
    origin, kind, title, options, default_action, field
):
    with pytest.raises(BadRequest) as refused:
        post_item(origin, kind, title, "", options, default_action=default_action)
    assert refused.value.field == field
    assert refused.value.message.startswith(f"{field}: ")
    assert not InboxItem.objects.exists()


# --- answering -----------------------------------------------------------------------------------


def test_an_answer_reaches_the_origin_process_as_a_typed_inbox_answer_and_wakes_it(alice, origin):
    item = approval(origin)
    # when
    answered = do_answer(alice.user, item.public_id, {"decision": "approve", "comment": "fine"})
    # then the item is answered, by alice, and the answer was delivered
    assert answered.delivered is True
    stored = InboxItem.objects.get(pk=item.pk)
    assert stored.status == InboxStatus.ANSWERED
    assert stored.answer == {"decision": "approve", "comment": "fine"}
    assert stored.answered_by_id == alice.user.pk
    assert stored.answered_at is not None
    assert (stored.origin_delivered, stored.origin_note) == (True, "")
    # as one INBOX_ANSWER pending message that the engine gets as an InboxAnswer
    [pending] = inbox_answers(origin.pk)
    message = parse(pending.kind, pending.seq, pending.payload)
    assert message == InboxAnswer(
        pending.seq,
        "approve: fine",
        item_id=item.public_id,
        answer={"decision": "approve", "comment": "fine"},
    )
    # which woke the (ford) process: its LLM read it behind the tag of docs/protocol.md
    seen = f"[inbox answer {item.public_id}]\napprove: fine"
    wait_until(lambda: seen in user_messages(origin.pk))
    wait_until(lambda: PendingMessage.objects.get(pk=pending.pk).consumed)


def test_a_question_is_answered_with_text_or_with_one_of_its_options(alice, origin):
    free = question(origin)
    choice = question(origin, options=["2023", "2024"])
    do_answer(alice.user, free.public_id, {"text": "the last one"})
    do_answer(alice.user, choice.public_id, {"choice": "2024"})
    texts = [message.payload["text"] for message in inbox_answers(origin.pk)]
    assert texts == ["the last one", "2024"]
    assert InboxItem.objects.get(pk=choice.pk).answer == {"choice": "2024"}


def test_a_second_answer_is_a_409_and_changes_nothing(alice, origin):
    item = approval(origin)
    do_answer(alice.user, item.public_id, {"decision": "approve"})
    before = InboxItem.objects.get(pk=item.pk)
    # when
    with pytest.raises(Conflict, match="it is ANSWERED"):
        do_answer(alice.user, item.public_id, {"decision": "reject"})
    # then
    after = InboxItem.objects.get(pk=item.pk)
    assert (after.answer, after.answered_at) == (before.answer, before.answered_at)
    assert len(inbox_answers(origin.pk)) == 1
    assert InboxTransition.objects.filter(item=item).count() == 2


@pytest.mark.parametrize(
    ("kind", "answer", "field"),
    [
        ("APPROVAL", {"decision": "maybe"}, "answer.decision"),
        ("APPROVAL", {}, "answer.decision"),
        ("APPROVAL", {"decision": "approve", "mood": "good"}, "answer.mood"),
        ("APPROVAL", "approve", "answer"),
        ("QUESTION", {}, "answer"),
        ("QUESTION", {"text": "a", "choice": "2024"}, "answer"),
        ("QUESTION", {"text": ""}, "answer.text"),
        ("QUESTION", {"choice": "1999"}, "answer.choice"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_400_naming_the_field(alice, origin, kind, answer, field):
    item = approval(origin) if kind == "APPROVAL" else question(origin, options=["2024"])
    with pytest.raises(BadRequest) as refused:
        do_answer(alice.user, item.public_id, answer)
    assert refused.value.field == field
    assert InboxItem.objects.get(pk=item.pk).status == InboxStatus.OPEN
    assert inbox_answers(origin.pk) == []


def test_an_output_text_item_cannot_be_answered_only_dismissed(alice, origin):
    item = post_item(origin, "OUTPUT_TEXT", "Report ready", "# Findings\n…")
    with pytest.raises(Conflict, match="nothing to answer; dismiss it"):
        do_answer(alice.user, item.public_id, {"text": "thanks"})
    dismissed = dismiss_item(alice.user, item.public_id)
    assert dismissed.status == InboxStatus.DISMISSED
    assert inbox_answers(origin.pk) == []
    with pytest.raises(Conflict, match="it is DISMISSED"):
        dismiss_item(alice.user, item.public_id)


@pytest.mark.parametrize("item_id", ["foreign", "inb_999999", "tp_1", ""])
def test_another_users_item_or_no_item_is_a_404_and_nothing_changes(alice, bob, item_id):
    bobs_origin = ThinkProcess.objects.get(pk=open_session(bob).chat_process_id)
    bobs = approval(bobs_origin)
    target = bobs.public_id if item_id == "foreign" else item_id
    with pytest.raises(NotFound):
        do_answer(alice.user, target, {"decision": "approve"})
    with pytest.raises(NotFound):
        dismiss_item(alice.user, target)
    with pytest.raises(NotFound):
        get_visible_item(alice.user, target)
    assert InboxItem.objects.get(pk=bobs.pk).status == InboxStatus.OPEN
    assert list(visible_items(alice.user)) == []
    assert list(visible_items(bob.user)) == [bobs]


# --- items that outlive their process ------------------------------------------------------------


def test_an_answer_to_an_item_of_a_closed_process_is_stored_undelivered_with_the_reason(
    alice, origin
):
    item = approval(origin)
    stop_process(origin.pk)
    # when
    answered = do_answer(alice.user, item.public_id, {"decision": "reject"})
    # then
    assert answered.delivered is False
    stored = InboxItem.objects.get(pk=item.pk)
    assert stored.status == InboxStatus.ANSWERED
    assert stored.answer == {"decision": "reject"}
    assert stored.origin_delivered is False
    assert stored.origin_note.startswith(f"{origin.public_id} is CLOSED (STOPPED): ")
    assert inbox_answers(origin.pk) == []


def test_an_item_whose_process_is_gone_keeps_its_origin_id_and_its_answer_is_stored(alice, origin):
    item = question(origin)
    ThinkProcess.objects.filter(pk=origin.pk).delete()
    # when
    answered = do_answer(alice.user, item.public_id, {"text": "2024"})
    # then
    stored = InboxItem.objects.get(pk=item.pk)
    assert (stored.origin_process_id, stored.origin_public_id) == (None, origin.public_id)
    assert answered.delivered is False
    assert stored.origin_note == (
        f"{origin.public_id} no longer exists: the answer is stored, no process reads it"
    )


def test_the_admin_path_answers_any_item_through_the_same_rules(bob, origin):
    item = approval(origin)
    answered = answer_item(item, {"decision": "approve"}, by=bob.user)
    assert answered.delivered
    with pytest.raises(Conflict):
        answer_item(InboxItem.objects.get(pk=item.pk), {"decision": "reject"}, by=bob.user)
    assert len(inbox_answers(origin.pk)) == 1
