"""A provider outage through the real openai client against a local OpenAI-compatible server
that is down (503) and then up, over the WebSocket: the chat waits resumable, and
`process-resume` answers what was sent meanwhile, once each, in order, with no event twice."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from channels.db import database_sync_to_async

from processes.lane import driver
from processes.models import PendingMessage, ThinkProcess
from tests.support.openai_stub import OpenAIStubServer, send_json
from tests.support.ws import Client, bearer, connect, open_session
from vancetope.llm.factory import reset_provider_cache

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


class OutageStub(OpenAIStubServer):
    """Answers 503 to chat completions while `down`, then as the echo stub does."""

    down = True
    failed = 0

    def _complete(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if self.down:
            self.failed += 1
            send_json(handler, 503, {"error": {"message": "the model is overloaded"}})
            return
        super()._complete(handler, body)


@pytest.fixture
def outage(settings: Any) -> Iterator[OutageStub]:
    with OutageStub() as stub:
        settings.VANCETOPE_LLM = "openai"
        settings.OPENAI_BASE_URL = stub.base_url
        settings.OPENAI_API_KEY = "sk-test"
        settings.VANCETOPE_TURN_RETRY_SECONDS = 0.05
        reset_provider_cache()
        yield stub
    reset_provider_cache()


@database_sync_to_async
def process_row(public_id: str) -> ThinkProcess:
    return ThinkProcess.objects.get(pk=int(public_id.removeprefix("tp_")))


@database_sync_to_async
def pending(public_id: str) -> int:
    pk = int(public_id.removeprefix("tp_"))
    return PendingMessage.objects.filter(process_id=pk, consumed=False).count()


async def test_three_messages_sent_while_the_provider_is_down_are_answered_once_in_order_on_resume(
    alice, outage: OutageStub
):
    # given a ford chat session whose provider is down
    client = await connect(bearer(alice))
    created = await open_session(client, alice, recipe="ford")
    chat_id = created["chatProcessId"]
    # when three messages are sent, each after the chat has given up on the one before
    for number, text in enumerate(["one", "two", "three"], start=1):
        accepted = await client.request("chat", {"text": text})
        assert accepted["type"] == "chat-accepted", accepted
        await wait_for_blocked(client, chat_id, number)
    # then the chat waits, resumable, with the provider's error and all three messages kept
    waiting = await process_row(chat_id)
    assert waiting.status == "BLOCKED"
    assert waiting.last_error.startswith("the LLM provider failed")
    assert "503" in waiting.last_error
    assert await pending(chat_id) == 3
    assert outage.failed == 3 * driver.MAX_TURN_ATTEMPTS
    notices = [e for e in client.events if e["event"] == "notification"]
    assert notices
    assert all(n["data"]["level"] == "warning" for n in notices)
    assert "process-resume" in notices[-1]["data"]["text"]

    # when the provider is up again and the person resumes the chat
    outage.down = False
    resumed = await client.request("process-resume", {"processId": chat_id})
    assert resumed["type"] == "process-resumed", resumed
    # then all three are answered, once each and in order
    for text in ["one", "two", "three"]:
        await client.event("chat-message", role="assistant", text=f"echo: {text}")
    await client.event("process-status", processId=chat_id, status="IDLE", after=0)
    messages = [
        (e["data"]["role"], e["data"]["text"])
        for e in client.events
        if e["event"] == "chat-message"
    ]
    assert messages == [
        ("user", "one"),
        ("assistant", "echo: one"),
        ("user", "two"),
        ("assistant", "echo: two"),
        ("user", "three"),
        ("assistant", "echo: three"),
    ]
    # and no event went out twice: seqs grow by one, and no stored message was sent again
    seqs = [e["seq"] for e in client.events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert await pending(chat_id) == 0
    assert (await process_row(chat_id)).last_error == ""


async def wait_for_blocked(client: Client, chat_id: str, number: int) -> None:
    """Wait for the chat's `number`-th BLOCKED status event."""
    while True:
        blocked = [
            e
            for e in client.events
            if e["event"] == "process-status"
            and e["data"].get("processId") == chat_id
            and e["data"].get("status") == "BLOCKED"
        ]
        if len(blocked) >= number:
            return
        last = client.events[-1]["seq"] if client.events else 0
        await client.event("process-status", after=last, processId=chat_id, status="BLOCKED")


class RefusingStub(OpenAIStubServer):
    """Answers 401 (a bad API key) to every chat completion."""

    refused = 0

    def _complete(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        self.refused += 1
        send_json(handler, 401, {"error": {"message": "Incorrect API key provided"}})


async def test_a_bad_api_key_is_not_retried_and_says_that_retrying_will_not_help(
    alice, settings: Any
):
    with RefusingStub() as stub:
        # given a chat whose provider refuses the API key
        settings.VANCETOPE_LLM = "openai"
        settings.OPENAI_BASE_URL = stub.base_url
        settings.OPENAI_API_KEY = "sk-wrong"
        reset_provider_cache()
        try:
            client = await connect(bearer(alice))
            chat_id = (await open_session(client, alice, recipe="ford"))["chatProcessId"]
            # when the person chats
            await client.request("chat", {"text": "hello"})
            await wait_for_blocked(client, chat_id, 1)
        finally:
            reset_provider_cache()
    # then it was tried once, and the chat waits saying plainly what is wrong
    assert stub.refused == 1
    waiting = await process_row(chat_id)
    assert waiting.status == "BLOCKED"
    assert "refused the request" in waiting.last_error
    assert "trying again will not help" in waiting.last_error
    assert "401" in waiting.last_error
    assert await pending(chat_id) == 1
