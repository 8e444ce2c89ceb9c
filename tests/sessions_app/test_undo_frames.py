"""`process-undo` and `process-unsend` over the WebSocket, with a ford chat whose LLM is a local
OpenAI-compatible server reached through the real `openai` client: what the LLM is sent after
an undo, and a withdrawn message that is never answered, also across a restart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async

from processes import recovery
from processes.capabilities import conversation_cache
from processes.lane.worker import shutdown_worker
from processes.models import PendingMessage, ThinkProcess
from tests.support.openai_stub import OpenAIStubServer
from tests.support.ws import FINGERPRINT, Client, bearer, connect, open_session
from vancetope.llm.factory import reset_provider_cache

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def stub(settings: Any) -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as server:
        settings.VANCETOPE_LLM = "openai"
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "sk-test"
        reset_provider_cache()
        yield server
    reset_provider_cache()


def conversations(stub: OpenAIStubServer) -> list[list[tuple[str, str]]]:
    """What each chat completion was sent, system prompt left out."""
    return [
        [(m["role"], m["content"]) for m in request.body["messages"] if m["role"] != "system"]
        for request in stub.recorded
        if request.path == "/v1/chat/completions"
    ]


async def answered(client: Client, text: str) -> None:
    await client.event("chat-message", role="assistant", text=f"echo: {text}")
    last = client.events[-1]["seq"]
    if not any(
        e["event"] == "process-status" and e["data"]["status"] == "IDLE" and e["seq"] >= last
        for e in client.events
    ):
        await client.event("process-status", after=last - 1, status="IDLE")


async def test_after_an_undo_the_llm_is_sent_the_first_exchange_and_the_new_message_only(
    alice, stub: OpenAIStubServer
):
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice, recipe="ford"))["chatProcessId"]
    # given two exchanges
    for text in ("one", "two"):
        accepted = await client.request("chat", {"text": text})
        assert accepted["type"] == "chat-accepted", accepted
        await answered(client, text)
    # when the person undoes
    reply = await client.request("process-undo", {"processId": chat_id})
    # then the reply hands back "two" and says what was taken back
    assert reply["type"] == "process-undone", reply
    undone = reply["data"]["undone"]
    assert (undone["text"], undone["seq"], undone["messages"]) == ("two", 2, 2)
    assert undone["stoppedProcesses"] == undone["dismissedItems"] == undone["notUndone"] == []
    assert reply["data"]["process"]["status"] == "IDLE"
    # and the conversation shows only the first exchange
    detail = await client.request("process-get", {"processId": chat_id})
    shown = [(m["role"], m["content"]) for m in detail["data"]["process"]["conversation"]]
    assert shown == [("user", "one"), ("assistant", "echo: one")]
    # when the person sends "three"
    await client.request("chat", {"text": "three"})
    await answered(client, "three")
    # then the LLM was sent the history of "one" and "three" only
    assert conversations(stub)[-1] == [
        ("user", "one"),
        ("assistant", "echo: one"),
        ("user", "three"),
    ]
    # and a client that resumes from the start is not shown the undone turn
    session_id = await client_session(chat_id)
    other = await connect(bearer(alice))
    resumed = await other.request(
        "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT, "sinceSeq": 0}
    )
    assert resumed["type"] == "session-resumed", resumed
    said = [e["data"]["text"] for e in resumed["data"]["missed"] if e["event"] == "chat-message"]
    assert said == ["one", "echo: one", "three", "echo: three"]


@database_sync_to_async
def client_session(chat_id: str) -> str:
    return f"sess_{ThinkProcess.objects.get(pk=int(chat_id[3:])).session_id}"


@database_sync_to_async
def pending_seqs(chat_id: str) -> list[int]:
    rows = PendingMessage.objects.filter(process_id=int(chat_id[3:]), consumed=False)
    return list(rows.values_list("seq", flat=True))


@database_sync_to_async
def restart() -> None:
    """As a Brain that stops and starts again: no lane left, no cached conversation, and the
    restart's recovery sweep."""
    shutdown_worker(wait=True)
    conversation_cache.clear()
    recovery.recover_processes()


async def test_an_unsent_message_is_never_answered_also_after_a_restart(
    alice, stub: OpenAIStubServer
):
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice, recipe="ford"))["chatProcessId"]
    # given a paused chat with a message waiting, whose reply names its seq
    await client.request("process-pause", {"processId": chat_id})
    accepted = await client.request("chat", {"text": "never mind"})
    assert accepted["data"]["seq"] == 1
    assert accepted["data"]["pending"] == 1
    # when the person unsends it
    unsent = await client.request("process-unsend", {"processId": chat_id, "seq": 1})
    assert unsent["type"] == "process-unsent", unsent
    assert unsent["data"] == {"processId": chat_id, "seq": 1}
    assert await pending_seqs(chat_id) == []
    # and a second unsend of it is refused
    again = await client.request("process-unsend", {"processId": chat_id, "seq": 1})
    assert (again["data"]["code"], again["data"]["message"]) == (
        409,
        f"cannot unsend message #1 of {chat_id}: it was unsent already",
    )
    # when the Brain restarts and the chat is resumed and used
    await restart()
    resumed = await client.request("process-resume", {"processId": chat_id})
    assert resumed["type"] == "process-resumed", resumed
    steered = await client.request("chat", {"text": "hello"})
    assert steered["data"]["seq"] == 2
    await answered(client, "hello")
    # then the withdrawn message was never answered, nor sent to the LLM
    assert conversations(stub) == [[("user", "hello")]]
    said = [e["data"]["text"] for e in client.events if e["event"] == "chat-message"]
    assert said == ["hello", "echo: hello"]
    # and a message a turn has answered is refused, pointing to undo
    late = await client.request("process-unsend", {"processId": chat_id, "seq": 2})
    assert late["data"]["code"] == 409
    assert "process-undo" in late["data"]["message"]


async def test_undo_and_unsend_frames_name_bad_fields_and_hide_other_tenants(
    alice, bob, stub: OpenAIStubServer
):
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice, recipe="ford"))["chatProcessId"]
    bad = await client.request("process-unsend", {"processId": chat_id, "seq": "1"})
    assert (bad["data"]["code"], bad["data"]["field"]) == (400, "data.seq")
    missing = await client.request("process-undo", {})
    assert (missing["data"]["code"], missing["data"]["field"]) == (400, "data.processId")
    nothing = await client.request("process-undo", {"processId": chat_id})
    assert nothing["data"]["code"] == 409
    assert "no turn to undo" in nothing["data"]["message"]
    intruder = await connect(bearer(bob))
    await open_session(intruder, bob)
    for kind, data in (
        ("process-undo", {"processId": chat_id}),
        ("process-unsend", {"processId": chat_id, "seq": 1}),
    ):
        refused = await intruder.request(kind, data)
        assert refused["data"]["code"] == 404, refused
