"""The inbox in the admin: changelist filters, the status history inline, and answers and
dismissals through the inbox services."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from inbox.models import InboxItem, InboxStatus, InboxTransition
from inbox.services import post_item
from processes.models import PendingKind, PendingMessage, ThinkProcess
from tests.support.tenancy import Tenancy, open_session

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = "admin:inbox_inboxitem_changelist"


def chat_of(tenancy: Tenancy) -> ThinkProcess:
    session = open_session(tenancy)
    assert session.chat_process_id is not None
    return ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)


def run_action(operator: Client, action: str, *items: InboxItem) -> list[str]:
    response = operator.post(
        reverse(CHANGELIST),
        {"action": action, "_selected_action": [item.pk for item in items]},
        follow=True,
    )
    assert response.status_code == 200
    return [str(message) for message in response.context["messages"]]


def listed(operator: Client, query: dict[str, Any]) -> int:
    response = operator.get(reverse(CHANGELIST), query)
    assert response.status_code == 200
    return int(response.context["cl"].result_count)


def test_the_changelist_filters_by_status_kind_and_project(operator, alice, bob):
    alices = chat_of(alice)
    approval = post_item(alices, "APPROVAL", "Deploy?", "")
    post_item(alices, "QUESTION", "Which year?", "", ["2024"])
    post_item(chat_of(bob), "OUTPUT_TEXT", "Report", "")
    run_action(operator, "dismiss_items", approval)
    assert listed(operator, {}) == 3
    assert listed(operator, {"status__exact": "OPEN"}) == 2
    assert listed(operator, {"kind__exact": "QUESTION"}) == 1
    assert listed(operator, {"project__id__exact": alice.project.pk}) == 2
    assert listed(operator, {"q": "Which"}) == 1


def test_items_are_not_added_by_hand_and_the_page_shows_the_status_history(operator, alice):
    item = post_item(chat_of(alice), "APPROVAL", "Deploy?", "")
    run_action(operator, "approve_items", item)
    assert operator.get(reverse("admin:inbox_inboxitem_add")).status_code == 403
    page = operator.get(reverse("admin:inbox_inboxitem_change", args=[item.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "answer" in text
    assert "ANSWERED" in text
    assert "answer_text" not in text  # nothing left to answer


def test_approve_and_reject_actions_answer_through_the_service(operator, alice):
    origin = chat_of(alice)
    approve = post_item(origin, "APPROVAL", "Deploy?", "")
    reject = post_item(origin, "APPROVAL", "Delete?", "")
    question = post_item(origin, "QUESTION", "Which year?", "")
    # when
    shown = run_action(operator, "approve_items", approve, question)
    shown += run_action(operator, "reject_items", reject)
    # then
    assert f"{approve.public_id}: approve → ANSWERED" in shown
    assert f"{question.public_id}: 400 it is QUESTION, not an APPROVAL" in shown
    answers = PendingMessage.objects.filter(process=origin, kind=PendingKind.INBOX_ANSWER)
    assert sorted(message.payload["text"] for message in answers) == ["approve", "reject"]
    assert InboxItem.objects.get(pk=question.pk).status == InboxStatus.OPEN
    assert InboxTransition.objects.get(item=approve, call="answer").by.username == "root"
    # and a second approval is a 409, reported
    again = run_action(operator, "approve_items", approve)
    assert again == [
        f"{approve.public_id}: 409 cannot answer inbox item {approve.public_id}: it is ANSWERED"
    ]


def test_a_question_is_answered_on_its_page_and_a_bad_answer_is_a_form_error(operator, alice):
    origin = chat_of(alice)
    item = post_item(origin, "QUESTION", "Which year?", "", ["2023", "2024"])
    approval = post_item(origin, "APPROVAL", "Deploy?", "")
    url = reverse("admin:inbox_inboxitem_change", args=[item.pk])
    inline = {
        "transitions-TOTAL_FORMS": "0",
        "transitions-INITIAL_FORMS": "0",
        "transitions-MIN_NUM_FORMS": "0",
        "transitions-MAX_NUM_FORMS": "1000",
    }
    # when
    response = operator.post(url, {**inline, "answer_text": "2024"})
    refused = operator.post(
        reverse("admin:inbox_inboxitem_change", args=[approval.pk]),
        {**inline, "answer_text": "maybe later"},
    )
    # then
    assert response.status_code == 302
    stored = InboxItem.objects.get(pk=item.pk)
    assert (stored.status, stored.answer) == (InboxStatus.ANSWERED, {"choice": "2024"})
    assert refused.status_code == 200
    assert "answer.decision" in refused.content.decode()
    assert InboxItem.objects.get(pk=approval.pk).status == InboxStatus.OPEN


def test_the_origin_process_is_linked_to_its_admin_page_in_the_list_and_on_the_item(
    operator, alice
):
    # given
    origin = chat_of(alice)
    item = post_item(origin, "APPROVAL", "Deploy?", "")
    process_url = reverse("admin:processes_thinkprocess_change", args=[origin.pk])
    # when
    changelist = operator.get(reverse(CHANGELIST)).content.decode()
    change = operator.get(reverse("admin:inbox_inboxitem_change", args=[item.pk])).content.decode()
    # then
    assert f'<a href="{process_url}">{origin.public_id}</a>' in changelist
    assert f'href="{process_url}"' in change


def test_an_item_whose_process_row_is_gone_names_it_without_a_link(operator, alice):
    # given: the origin process's row deleted (the item outlives it)
    origin = chat_of(alice)
    post_item(origin, "OUTPUT_TEXT", "Report", "")
    ThinkProcess.objects.filter(pk=origin.pk).delete()
    # when
    changelist = operator.get(reverse(CHANGELIST)).content.decode()
    # then
    assert f"{origin.public_id} (gone)" in changelist
