"""The process-start and process-reset frames of docs/protocol.md, through the real ASGI stack."""

from __future__ import annotations

import pytest

from processes.states import Status
from tests.support.ws import bearer, connect, open_session, process_row

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_process_start_starts_a_process_created_unstarted_and_refuses_a_second(alice):
    client = await connect(bearer(alice))
    await open_session(client, alice)
    # given a process created with start=false
    created = await client.request(
        "process-create", {"goal": "name a planet", "thinkEngine": "ford", "start": False}
    )
    process_id = created["data"]["process"]["id"]
    assert created["data"]["process"]["status"] == "INIT"
    # when it is started
    started = await client.request("process-start", {"processId": process_id})
    # then it is IDLE, and answers its goal
    assert started["type"] == "process-started"
    assert started["data"]["process"]["id"] == process_id
    assert started["data"]["process"]["status"] == "IDLE"
    # its goal is answered in the first turn its start queued; the client sees it end
    await client.event("chat-message", processId=process_id, role="assistant")
    detail = await client.request("process-get", {"processId": process_id})
    contents = [m["content"] for m in detail["data"]["process"]["conversation"]]
    assert contents == ["name a planet", "echo: name a planet"]
    # when it is started again, it is refused and left as it was
    before = await process_row(process_id)
    refused = await client.request("process-start", {"processId": process_id})
    assert refused["type"] == "error"
    assert refused["data"]["code"] == 409
    assert refused["data"]["message"] == f"cannot start process {process_id}: it is IDLE"
    after = await process_row(process_id)
    assert (after.status, after.updated_at) == (before.status, before.updated_at)
    await client.ws.disconnect()


async def test_process_reset_takes_a_paused_process_back_to_init_and_refuses_an_idle_one(alice):
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice))["chatProcessId"]
    await client.request("chat", {"text": "remember this"})
    reply = await client.event("chat-message", role="assistant", text="echo: remember this")
    await client.event("process-status", after=reply["seq"], processId=chat_id, status="IDLE")
    # an IDLE process cannot be reset: the error names its status, nothing changes
    before = await process_row(chat_id)
    refused = await client.request("process-reset", {"processId": chat_id})
    assert refused["type"] == "error"
    assert refused["data"]["code"] == 409
    assert refused["data"]["message"] == f"cannot reset process {chat_id}: it is IDLE"
    after = await process_row(chat_id)
    assert (after.status, after.conversation_length) == (Status.IDLE, before.conversation_length)
    # given the process is paused
    paused = await client.request("process-pause", {"processId": chat_id})
    assert paused["data"]["process"]["status"] == "PAUSED"
    # when it is reset
    reset = await client.request("process-reset", {"processId": chat_id})
    # then it is INIT again, its conversation gone
    assert reset["type"] == "process-reset"
    assert reset["data"]["process"]["id"] == chat_id
    assert reset["data"]["process"]["status"] == "INIT"
    detail = await client.request("process-get", {"processId": chat_id})
    assert detail["data"]["process"]["conversation"] == []
    # and a process-start opens it again
    started = await client.request("process-start", {"processId": chat_id})
    assert started["data"]["process"]["status"] == "IDLE"
    await client.ws.disconnect()
