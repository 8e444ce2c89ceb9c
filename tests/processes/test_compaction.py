"""Compaction, recall and their undo, through the lane, the WebSocket consumer and REST: a
long chat's oldest turns are folded into a summary after a turn, what they said is recalled
when asked for, a person can undo a summary, and an undo of a folded turn undoes it too.
Nothing is ever deleted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async

from processes.actions.undo import undo_turn
from processes.models import Compaction, ConversationMessage, ThinkProcess
from sessions_app.models import Session
from tests.config.helpers import chat, ford_session, set_value
from tests.support.recording_llm import RecordingProvider
from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until
from tests.support.ws import bearer, connect, open_session
from vancetope.config.models import Scope
from vancetope.memory.capability import MemoryAccess
from vancetope.memory.models import MemoryItem

pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = 1024
CODE = "my code word is PELICAN-42"


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> RecordingProvider:
    # a model whose server says its window
    provider = RecordingProvider(window=WINDOW)
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: provider)
    return provider


def small_talk(n: int) -> str:
    return f"turn {n}: " + " ".join(f"chatter{n}x{i}" for i in range(25))


def long_chat(session: Session, turns: int) -> int:
    chat_id = session.chat_process_id
    assert chat_id is not None
    for n in range(1, turns + 1):
        chat(session, CODE if n == 3 else small_talk(n))
    wait_until(lambda: not ThinkProcess.objects.get(pk=chat_id).lease_owner)
    return chat_id


def folds(chat_id: int) -> list[Compaction]:
    return list(Compaction.objects.filter(process_id=chat_id).order_by("last_index"))


def test_a_folded_fact_is_recalled_when_the_person_asks_for_it(
    alice: Tenancy, recording: RecordingProvider
):
    # given a long chat whose third turn told a code word, folded away since
    session = ford_session(alice)
    chat_id = long_chat(session, 24)
    assert folds(chat_id)
    # the fold's turns are in the session's memory, one item each
    items = MemoryItem.objects.filter(source_id=f"tp_{chat_id}", valid_to__isnull=True)
    assert any(CODE in item.content and "conversation" in item.tags for item in items)
    # when the person asks for it
    chat(session, "what was my code word again?")
    # then the call that answers sends the third turn's words, recalled, though it is folded
    sent = recording.sent()[-1]
    assert all(message.content != CODE for message in sent)
    recalled = [m for m in sent if m.content.startswith("[Recalled from earlier")]
    assert any(CODE in message.content for message in recalled)
    last_call = ThinkProcess.objects.get(pk=chat_id).last_call
    assert last_call is not None
    assert {p["name"]: p for p in last_call["parts"]}["recalled"]["messages"] >= 1


def test_a_compaction_the_model_cannot_write_folds_by_first_lines(
    alice: Tenancy, recording: RecordingProvider
):
    # given a provider that fails every compact call
    recording.failing_steps = {"compact"}
    session = ford_session(alice)
    # when the chat grows past its window
    chat_id = long_chat(session, 16)
    # then the conversation is folded all the same, by the turns' first lines, and every turn
    # was answered
    found = folds(chat_id)
    assert found
    assert {fold.method for fold in found} == {"fallback"}
    assert "- turn 1: chatter1x0" in found[0].summary
    assert ThinkProcess.objects.get(pk=chat_id).last_error == ""
    answers = ConversationMessage.objects.filter(process_id=chat_id, role="assistant")
    assert answers.count() == 16


def test_undoing_a_folded_turn_undoes_its_compaction_and_forgets_its_recall(
    alice: Tenancy, recording: RecordingProvider, settings: Any
):
    # given a chat folded up to its newest turns (an undo may reach that far back)
    settings.VANCETOPE_UNDO_KEEP_TURNS = 30
    session = ford_session(alice)
    chat_id = long_chat(session, 16)
    newest = folds(chat_id)[-1]
    turns_back = (
        ConversationMessage.objects.filter(process_id=chat_id, index__gt=newest.last_index).count()
        // 2
    )
    # when the person undoes turns until one the compaction folded is taken back
    for _ in range(turns_back + 1):
        undo_turn(chat_id)
    # then that compaction is undone, the recall items of the hidden turn are invalidated, and
    # no message was deleted
    newest.refresh_from_db()
    assert newest.undone_at is not None
    hidden = ConversationMessage.objects.filter(process_id=chat_id, undone_at__isnull=False)
    first_hidden = min(hidden.values_list("index", flat=True))
    kept = MemoryItem.objects.filter(source_id=f"tp_{chat_id}", valid_to__isnull=True)
    for item in kept:
        index = next(int(t[6:]) for t in item.tags if t.startswith("index:"))
        assert index < first_hidden
    assert ConversationMessage.objects.filter(process_id=chat_id).count() == 32
    # and the next turn is answered, within the window
    chat(session, "and now?")
    last_call = ThinkProcess.objects.get(pk=chat_id).last_call
    assert last_call is not None
    assert last_call["tokens"] <= WINDOW


async def test_a_person_undoes_a_summary_over_the_socket_and_the_chat_hears_of_both(
    alice: Tenancy, recording: RecordingProvider
):
    # given a chat over the WebSocket that grew past its window
    client = await connect(bearer(alice))
    opened = await open_session(client, alice, recipe="ford")
    chat_id = opened["chatProcessId"]
    pk = int(chat_id.removeprefix("tp_"))
    for n in range(1, 17):
        await client.request("chat", {"text": small_talk(n)})
        await client.event("chat-message", role="assistant", text=f"echo: {small_talk(n)}")
    # then the chat heard of the fold
    folded = await client.event("conversation-folded")
    compaction = folded["data"]["compaction"]
    assert folded["data"]["processId"] == chat_id
    assert compaction["turns"] >= 1
    assert compaction["summary"]
    assert compaction["undoneAt"] is None
    # (a compaction after the last turn may still hold the lane, which a 409 says: try again)
    await database_sync_to_async(wait_until)(
        lambda: not ThinkProcess.objects.get(pk=pk).lease_owner
    )
    # when the person undoes the summary in use
    reply = await client.request("process-uncompact", {"processId": chat_id})
    for _ in range(100):
        if reply["type"] != "error" or "is running" not in reply["data"]["message"]:
            break
        await asyncio.sleep(0.05)
        reply = await client.request("process-uncompact", {"processId": chat_id})
    # then it is undone, the reply and an event say so, and process-get shows the one before
    assert reply["type"] == "process-uncompacted", reply
    taken = reply["data"]["compaction"]
    assert taken["undoneAt"] is not None
    in_use = await database_sync_to_async(Compaction.objects.get)(pk=int(taken["id"][4:]))
    assert in_use.process_id == pk
    assert in_use.undone_at is not None
    undone = await undone_event(client, in_use.public_id)
    assert undone["data"]["processId"] == chat_id
    shown = await client.request("process-get", {"processId": chat_id})
    current = shown["data"]["process"]["compaction"]
    assert current is None or current["id"] != in_use.public_id
    await client.ws.disconnect()


async def undone_event(client: Any, compaction_id: str) -> dict[str, Any]:
    """The conversation-folded event that says `compaction_id` was undone."""
    after = 0
    while True:
        found = await client.event("conversation-folded", after=after)
        compaction = found["data"]["compaction"]
        if compaction["id"] == compaction_id and compaction["undoneAt"] is not None:
            return found
        after = found["seq"]


def test_uncompact_over_rest_answers_409_without_a_compaction_and_404_for_a_stranger(
    alice: Tenancy, bob: Tenancy, recording: RecordingProvider
):
    # given a short chat, never folded
    session = ford_session(alice)
    chat(session, "hello")
    path = f"/api/processes/tp_{session.chat_process_id}/uncompact"
    # when its person asks to undo a summary, then 409 says there is none
    refused = alice.api().post(path)
    assert refused.status_code == 409
    assert "has no compaction to undo" in refused.json()["message"]
    # and another tenant's user does not learn the process exists
    assert bob.api().post(path).status_code == 404
    # when the chat grows past its window, the same call undoes its summary
    long_chat(session, 16)
    done = alice.api().post(path)
    assert done.status_code == 200, done.json()
    assert done.json()["compaction"]["undoneAt"] is not None
    assert done.json()["process"]["id"] == f"tp_{session.chat_process_id}"


def test_with_recall_off_nothing_of_the_conversation_goes_to_memory(
    alice: Tenancy, recording: RecordingProvider
):
    # given a project whose admin turned recall off
    set_value("llm.recall", Scope.PROJECT, alice.project, False)
    session = ford_session(alice)
    # when its chat grows past its window and is folded
    chat_id = long_chat(session, 16)
    assert folds(chat_id)
    chat(session, "what was my code word again?")
    # then no turn was written to memory, and no call recalled any
    assert not MemoryItem.objects.filter(source_id=f"tp_{chat_id}").exists()
    last_call = ThinkProcess.objects.get(pk=chat_id).last_call
    assert last_call is not None
    parts = {p["name"]: p for p in last_call["parts"]}
    assert parts["recalled"]["messages"] == 0
    assert parts["summary"]["leftOut"] > 0


def test_folded_turns_are_found_by_the_memory_search_the_chat_has(
    alice: Tenancy, recording: RecordingProvider
):
    # given a long chat whose third turn told a code word, folded away since
    session = ford_session(alice)
    chat_id = long_chat(session, 24)
    # when the chat's memory is searched as arthur's memory_search does (the session's reach)
    memory = MemoryAccess.of(alice.project.pk, session.pk, alice.user.pk, f"tp_{chat_id}")
    found = memory.search("code word PELICAN", k=5)
    # then the folded turn is found, as the process's own
    assert any(
        result["source"]["id"] == f"tp_{chat_id}" and "PELICAN-42" in result["snippet"]
        for result in found
    )
