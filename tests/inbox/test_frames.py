"""The inbox's WebSocket frames through the real ASGI stack: inbox-list, inbox-answer,
inbox-dismiss, and the inbox-item event on every open session of the item's user."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from inbox.models import InboxItem, InboxStatus
from inbox.services import post_item
from processes.models import PendingKind, PendingMessage, ThinkProcess
from protocol import outbound as out
from tests.support.ws import Client, bearer, connect, open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@database_sync_to_async
def post(process_id: str, kind: str = "APPROVAL", **extra: Any) -> str:
    process = ThinkProcess.objects.select_related("session").get(
        pk=int(process_id.removeprefix("tp_"))
    )
    options = extra.pop("options", None)
    return post_item(process, kind, f"a {kind.lower()}", "Say **yes**.", options, **extra).public_id


@database_sync_to_async
def item_status(item_id: str) -> str:
    return InboxItem.objects.get(pk=int(item_id.removeprefix("inb_"))).status


@database_sync_to_async
def inbox_answers(process_id: str) -> list[dict[str, Any]]:
    rows = PendingMessage.objects.filter(
        process_id=int(process_id.removeprefix("tp_")), kind=PendingKind.INBOX_ANSWER
    )
    return [row.payload for row in rows]


async def session_of(tenancy: Any) -> tuple[Client, str]:
    client = await connect(bearer(tenancy))
    created = await open_session(client, tenancy)
    return client, created["chatProcessId"]


async def test_inbox_list_answers_with_the_users_open_items_newest_first(alice):
    client, chat = await session_of(alice)
    first = await post(chat)
    second = await post(chat, "QUESTION", options=["2023", "2024"])
    dismissed = await post(chat, "OUTPUT_TEXT")
    await client.request("inbox-dismiss", {"itemId": dismissed})
    # when
    listing = await client.request("inbox-list")
    # then: a reply of its model, OPEN items only by default
    out.server_frame.validate_python(listing)
    assert listing["type"] == "inbox"
    assert [item["id"] for item in listing["data"]["items"]] == [second, first]
    assert listing["data"]["items"][0]["options"] == ["2023", "2024"]
    everything = await client.request("inbox-list", {"status": "DISMISSED"})
    assert [item["id"] for item in everything["data"]["items"]] == [dismissed]
    await client.ws.disconnect()


async def test_an_answer_is_replied_delivered_and_announced_as_an_inbox_item_event(alice):
    client, chat = await session_of(alice)
    item_id = await post(chat)
    posted = await client.event("inbox-item")
    assert posted["data"]["item"]["status"] == "OPEN"
    # when
    answered = await client.request(
        "inbox-answer", {"itemId": item_id, "answer": {"decision": "approve", "comment": "ok"}}
    )
    # then
    out.server_frame.validate_python(answered)
    assert answered["type"] == "inbox-answered"
    assert answered["data"]["delivered"] is True
    item = answered["data"]["item"]
    assert (item["status"], item["answer"]) == (
        "ANSWERED",
        {"decision": "approve", "comment": "ok"},
    )
    assert item["answeredBy"] == "user-alice"
    assert item["originDelivered"] is True
    changed = await client.event("inbox-item", after=posted["seq"])
    assert changed["data"]["item"] == item
    assert await inbox_answers(chat) == [
        {
            "text": "approve: ok",
            "itemId": item_id,
            "answer": {"decision": "approve", "comment": "ok"},
        }
    ]
    # and a second answer is a 409 that changes nothing
    again = await client.request(
        "inbox-answer", {"itemId": item_id, "answer": {"decision": "reject"}}
    )
    assert (again["type"], again["data"]["code"]) == ("error", 409)
    assert "it is ANSWERED" in again["data"]["message"]
    assert len(await inbox_answers(chat)) == 1
    await client.ws.disconnect()


@pytest.mark.parametrize(
    ("data", "field", "text"),
    [
        ({"answer": {"decision": "maybe"}}, "data.answer.decision", "'approve' or 'reject'"),
        ({"answer": {"decision": "approve", "mood": 1}}, "data.answer.mood", "not permitted"),
        ({"answer": "approve"}, "data.answer", "valid dictionary"),
        ({}, "data.answer", "Field required"),
    ],
)
async def test_an_answer_of_the_wrong_shape_is_a_400_naming_the_field(alice, data, field, text):
    client, chat = await session_of(alice)
    item_id = await post(chat)
    reply = await client.request("inbox-answer", {"itemId": item_id, **data})
    assert reply["type"] == "error"
    assert (reply["data"]["code"], reply["data"]["field"]) == (400, field)
    assert text in reply["data"]["message"]
    assert await item_status(item_id) == InboxStatus.OPEN
    await client.ws.disconnect()


async def test_another_users_item_is_a_404_over_the_socket_and_stays_open(alice, bob):
    bobs_client, bobs_chat = await session_of(bob)
    bobs_item = await post(bobs_chat)
    client, _ = await session_of(alice)
    for kind, data in [
        ("inbox-answer", {"itemId": bobs_item, "answer": {"decision": "approve"}}),
        ("inbox-dismiss", {"itemId": bobs_item}),
    ]:
        reply = await client.request(kind, data)
        assert (reply["type"], reply["data"]["code"]) == ("error", 404)
        assert "bob" not in reply["data"]["message"]
    listing = await client.request("inbox-list")
    assert listing["data"]["items"] == []
    assert await item_status(bobs_item) == InboxStatus.OPEN
    # and alice's session never saw bob's item
    assert not [event for event in client.events if event["event"] == "inbox-item"]
    await client.ws.disconnect()
    await bobs_client.ws.disconnect()


async def test_dismissing_replies_with_the_item_and_a_second_dismiss_is_a_409(alice):
    client, chat = await session_of(alice)
    item_id = await post(chat, "OUTPUT_TEXT")
    dismissed = await client.request("inbox-dismiss", {"itemId": item_id})
    out.server_frame.validate_python(dismissed)
    assert dismissed["type"] == "inbox-dismissed"
    assert dismissed["data"]["item"]["status"] == "DISMISSED"
    again = await client.request("inbox-dismiss", {"itemId": item_id})
    assert again["data"]["code"] == 409
    answer = await client.request("inbox-answer", {"itemId": item_id, "answer": {"text": "x"}})
    assert answer["data"]["code"] == 409
    await client.ws.disconnect()


async def test_inbox_list_with_an_unknown_status_is_a_400_naming_it(alice):
    client, _ = await session_of(alice)
    reply = await client.request("inbox-list", {"status": "LOST"})
    assert (reply["data"]["code"], reply["data"]["field"]) == (400, "data.status")
    await client.ws.disconnect()
