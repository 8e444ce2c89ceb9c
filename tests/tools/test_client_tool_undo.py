"""An undone turn that ran a client tool: the Brain cannot take back what the client did, so
the reply lists the call as not undone, and the tool-call event leaves replays."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from sessions_app.models import SessionEvent
from tests.support.client_tools import LIST_FILES, coding_session, send_tool_result
from tests.support.ws import bearer, connect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_a_client_tool_call_of_an_undone_turn_is_listed_as_not_undone(alice, llm):
    llm(LIST_FILES)
    client = await connect(bearer(alice))
    chat_id = await coding_session(client, alice)
    await client.request("chat", {"text": "list the files"})
    call = await client.event("tool-call", processId=chat_id, tool="run_shell")
    call_id = call["data"]["callId"]
    await send_tool_result(client, call_id, ok=True, result="README.md")
    await client.event("chat-message", role="assistant")
    await client.event("process-status", processId=chat_id, status="IDLE")
    # when the turn is undone
    reply = await client.request("process-undo", {"processId": chat_id})
    # then the client's tool call is named as not undone
    assert reply["type"] == "process-undone", reply
    [note] = reply["data"]["undone"]["notUndone"]
    assert (note["kind"], note["id"]) == ("client-tool", call_id)
    assert "run_shell" in note["text"]
    # and its tool-call event is no longer replayed
    calls = SessionEvent.objects.filter(event="tool-call")
    replayed = await database_sync_to_async(lambda: list(calls.values_list("undone", flat=True)))()
    assert replayed == [True]
    await client.ws.disconnect()
