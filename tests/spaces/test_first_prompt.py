"""A blank branch takes the person's first prompt before they open it: `space-prompt` admits it
to that node's own session as the person's chat message, which its agent answers there; a
branch that has begun, or cannot take one, refuses with nothing queued."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from processes.models import PendingKind, PendingMessage
from protocol import outbound as out
from sessions_app.models import SessionEvent
from spaces.actions import agent
from spaces.models import ThinkingNode
from tests.support.waiting import wait_until
from tests.support.ws import bearer, connect, open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@database_sync_to_async
def blank_child(chat_process_id: str) -> ThinkingNode:
    process = int(chat_process_id.removeprefix("tp_"))
    agent.start_space(process)
    _, child = agent.split(process, "Rings", "Count the rings.")
    return ThinkingNode.objects.get(pk=child.pk)


@database_sync_to_async
def person_messages(node: ThinkingNode) -> list[str]:
    rows = PendingMessage.objects.filter(process_id=node.chat_process_id, kind=PendingKind.USER)
    return [row.payload["text"] for row in rows.order_by("seq")]


def answered(node: ThinkingNode) -> list[str]:
    rows = SessionEvent.objects.filter(session_id=node.session_id, event="chat-message")
    return [row.data["text"] for row in rows.order_by("seq") if row.data["role"] == "assistant"]


async def test_a_blank_branchs_first_prompt_goes_to_its_own_session_once(alice, script):
    # given alice's session as a space's root, with a blank child branch
    script([{"engine": "arthur", "match": "^how many rings", "reply": "Seven main rings."}])
    client = await connect(bearer(alice))
    created = await open_session(client, alice, recipe="arthur")
    child = await blank_child(created["chatProcessId"])
    # when she gives the child its first prompt from the root's page
    reply = await client.request(
        "space-prompt", {"nodeId": child.public_id, "text": "how many rings?"}
    )
    # then the reply is the space, and the prompt is the child's own chat message, answered
    # in the child's session (not the root's)
    out.server_frame.validate_python(reply)
    assert reply["type"] == "space"
    assert await person_messages(child) == ["how many rings?"]
    await database_sync_to_async(wait_until)(lambda: answered(child) == ["Seven main rings."])
    # when she sends a first prompt again, to the branch that has begun
    again = await client.request("space-prompt", {"nodeId": child.public_id, "text": "more?"})
    # then it is refused, nothing is queued
    assert again["type"] == "error"
    assert again["data"]["code"] == 409
    assert "has begun its conversation" in again["data"]["message"]
    assert await person_messages(child) == ["how many rings?"]
    await client.ws.disconnect()


async def test_a_first_prompt_needs_text_and_a_node_of_hers(alice, bob, script):
    # given alice's blank branch, and bob's socket
    client = await connect(bearer(alice))
    created = await open_session(client, alice, recipe="arthur")
    child = await blank_child(created["chatProcessId"])
    other = await connect(bearer(bob))
    # when the text is empty, or bob names her node
    empty = await client.request("space-prompt", {"nodeId": child.public_id, "text": ""})
    foreign = await other.request("space-prompt", {"nodeId": child.public_id, "text": "hi"})
    # then a 400 naming the field, a 404, and nothing queued
    assert (empty["data"]["code"], "text" in empty["data"]["message"]) == (400, True)
    assert foreign["data"]["code"] == 404
    assert await person_messages(child) == []
    await client.ws.disconnect()
    await other.ws.disconnect()
