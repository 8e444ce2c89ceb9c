"""REST /api/inbox: scoping, filters, detail, answer and dismiss (409 once the item moved)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from inbox.models import InboxItem, InboxStatus
from inbox.services import post_item
from processes.actions.create import create_process
from processes.models import PendingKind, PendingMessage, ThinkProcess
from tests.support.tenancy import Tenancy, open_session

pytestmark = pytest.mark.django_db(transaction=True)


def chat_of(tenancy: Tenancy) -> ThinkProcess:
    session = open_session(tenancy)
    assert session.chat_process_id is not None
    return ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)


def post(process: ThinkProcess, kind: str = "APPROVAL", options=None) -> InboxItem:  # type: ignore[no-untyped-def]
    return post_item(process, kind, f"a {kind.lower()}", "", options)


def listed(response) -> list[str]:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_the_inbox_needs_a_token(db):
    assert APIClient().get("/api/inbox").status_code == 401


def test_the_list_is_the_callers_own_items_newest_first_with_filters(alice, bob):
    chat = chat_of(alice)
    worker = create_process(chat.session, goal="work", engine="ford", start=False)
    approval = post(chat)
    output = post(chat, "OUTPUT_TEXT")
    asked = post(worker, "QUESTION", ["a", "b"])
    post(chat_of(bob))
    api = alice.api()
    # when / then
    assert listed(api.get("/api/inbox")) == [asked.public_id, output.public_id, approval.public_id]
    assert listed(api.get("/api/inbox", {"kind": "QUESTION"})) == [asked.public_id]
    assert listed(api.get("/api/inbox", {"process": worker.public_id})) == [asked.public_id]
    api.post(f"/api/inbox/{output.public_id}/dismiss")
    assert listed(api.get("/api/inbox", {"status": "OPEN"})) == [
        asked.public_id,
        approval.public_id,
    ]
    page = api.get("/api/inbox", {"limit": 1}).json()
    assert (page["count"], len(page["results"])) == (3, 1)


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ({"status": "LOST"}, "status"),
        ({"kind": "MEMO"}, "kind"),
        ({"process": "sess_1"}, "process"),
    ],
)
def test_a_filter_that_names_nothing_is_a_400(alice, query, word):
    response = alice.api().get("/api/inbox", query)
    assert response.status_code == 400
    assert response.json()["message"].startswith(f"{word}: ")


def test_an_item_is_read_answered_once_and_its_answer_reaches_its_process(alice):
    chat = chat_of(alice)
    item = post(chat)
    api = alice.api()
    # when
    detail = api.get(f"/api/inbox/{item.public_id}")
    answered = api.post(
        f"/api/inbox/{item.public_id}/answer",
        {"answer": {"decision": "reject", "comment": "not today"}},
        format="json",
    )
    again = api.post(
        f"/api/inbox/{item.public_id}/answer", {"answer": {"decision": "approve"}}, format="json"
    )
    # then
    assert detail.status_code == 200
    assert detail.json()["status"] == "OPEN"
    assert answered.status_code == 200, answered.content
    body = answered.json()
    assert body["delivered"] is True
    assert body["item"]["status"] == "ANSWERED"
    assert body["item"]["answer"] == {"decision": "reject", "comment": "not today"}
    assert again.status_code == 409
    assert again.json()["error"] == "conflict"
    [pending] = PendingMessage.objects.filter(process=chat, kind=PendingKind.INBOX_ANSWER)
    assert pending.payload["text"] == "reject: not today"


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ({"answer": {"decision": "perhaps"}}, "answer.decision"),
        ({"answer": "approve"}, "answer"),
        ({}, "answer"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_400_naming_the_field(alice, body, word):
    item = post(chat_of(alice))
    response = alice.api().post(f"/api/inbox/{item.public_id}/answer", body, format="json")
    assert response.status_code == 400
    assert response.json()["message"].startswith(f"{word}: ")
    assert InboxItem.objects.get(pk=item.pk).status == InboxStatus.OPEN


def test_another_users_item_is_a_404_for_every_operation(alice, bob):
    item = post(chat_of(bob))
    api = alice.api()
    responses = [
        api.get(f"/api/inbox/{item.public_id}"),
        api.post(
            f"/api/inbox/{item.public_id}/answer",
            {"answer": {"decision": "approve"}},
            format="json",
        ),
        api.post(f"/api/inbox/{item.public_id}/dismiss"),
    ]
    assert [response.status_code for response in responses] == [404, 404, 404]
    assert InboxItem.objects.get(pk=item.pk).status == InboxStatus.OPEN


def test_dismiss_answers_with_the_item_and_then_is_a_409(alice):
    item = post(chat_of(alice), "OUTPUT_TEXT")
    api = alice.api()
    dismissed = api.post(f"/api/inbox/{item.public_id}/dismiss")
    assert dismissed.status_code == 200
    assert dismissed.json()["item"]["status"] == "DISMISSED"
    assert api.post(f"/api/inbox/{item.public_id}/dismiss").status_code == 409
