"""A stream the server cuts is a failed call, never an empty answer: llama.cpp's server ends a
chat's stream after its first chunk when the prompt outgrows its window, and the Brain stored
that as an empty reply and went back IDLE, saying nothing. Now the turn is retried like any
provider failure, then waits BLOCKED with the reason, which the person sees in the chat, and the
message is kept for the next try."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async

from processes.models import ConversationMessage, PendingMessage, ThinkProcess
from processes.states import Status
from tests.support.openai_stub import OpenAIStubServer, StubReply
from tests.support.waiting import at_rest
from tests.support.ws import bearer, connect, open_session, process_row
from vancetope.llm.factory import reset_provider_cache

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stub(settings: Any) -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as server:
        settings.VANCETOPE_LLM = "openai"
        settings.OPENAI_BASE_URL = server.base_url
        settings.VANCETOPE_TURN_RETRY_SECONDS = 0.01
        reset_provider_cache()
        yield server
    reset_provider_cache()


@pytest.mark.parametrize("cut", ["close", "done", "error"])
async def test_a_chat_whose_stream_is_cut_tells_the_person_and_keeps_the_message(
    alice, stub: OpenAIStubServer, cut: Any
):
    # given a ford chat over the WebSocket, on a server that cuts every stream of this turn
    stub.queue(*[StubReply(text="", cut=cut, error_message="context window exceeded")] * 3)
    client = await connect(bearer(alice))
    opened = await open_session(client, alice, recipe="ford")
    chat_id = opened["chatProcessId"]
    # when the person says something
    accepted = await client.request("chat", {"text": "what is my code word?"})
    assert accepted["type"] == "chat-accepted"
    # then the person is told the turn failed, and why
    notice = await client.event("notification", level="warning")
    assert "LLM provider failed" in notice["data"]["text"]
    reason = "without a finish reason" if cut != "error" else "context window exceeded"
    assert reason in notice["data"]["text"]
    # and the chat waits BLOCKED with the reason, no empty answer stored, the message kept
    row = await at_rest_async((await process_row(chat_id)).pk, Status.BLOCKED)
    assert reason in row.last_error
    assert len(stub.completions) == 3  # retried like any provider failure
    assert await assistant_messages(row.pk) == []
    assert await pending(row.pk) == 1
    # when the server answers again and the person resumes the chat
    resumed = await client.request("process-resume", {"processId": chat_id})
    assert resumed["type"] == "process-resumed", resumed
    # then the kept message is answered, once
    answer = await client.event("chat-message", role="assistant")
    assert answer["data"]["text"] == "echo: what is my code word?"
    await client.ws.disconnect()


@database_sync_to_async
def at_rest_async(process_id: int, status: Status) -> ThinkProcess:
    return at_rest(process_id, status)


@database_sync_to_async
def assistant_messages(process_id: int) -> list[str]:
    rows = ConversationMessage.objects.filter(process_id=process_id, role="assistant")
    return list(rows.values_list("content", flat=True))


@database_sync_to_async
def pending(process_id: int) -> int:
    return PendingMessage.objects.filter(process_id=process_id, consumed=False).count()
