"""Every LLM call of a long chat within its model's window: the lane assembles each call from
named parts (vancetope/llm/assembly.py), the process keeps what its last call sent, and the
REST detail and the process page show it part by part."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.test import Client

from processes.models import Compaction, ConversationMessage, ThinkProcess
from sessions_app.models import SessionEvent
from tests.config.helpers import chat, ford_session
from tests.support.recording_llm import RecordingProvider
from tests.support.waiting import wait_until
from vancetope.llm.assembly import budget_for
from vancetope.llm.tokens import Tokens

pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = 1024


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch, settings: Any) -> RecordingProvider:
    settings.VANCETOPE_LLM_CONTEXT_WINDOW = WINDOW
    provider = RecordingProvider()  # its window: the setting's
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: provider)
    return provider


def said(n: int) -> str:
    return f"turn {n}: " + " ".join(f"thought{n}-{i}" for i in range(40))


def test_a_long_chat_sends_every_call_within_the_window_and_shows_what_it_sent(
    alice, recording: RecordingProvider
):
    # given a ford chat on a model with a 1,024-token window
    session = ford_session(alice)
    chat_id = session.chat_process_id
    assert chat_id is not None
    budget = budget_for(WINDOW, RecordingProvider.max_tokens, None, Tokens())
    # when the person chats for 30 turns of about 40 words, well past the window
    for n in range(1, 31):
        assert chat(session, said(n)) == f"echo: {said(n)}"
    # then no call's prompt was over the budget, and each asked for the answer's share only
    tokens = Tokens()
    sizes = [tokens.messages(messages) for messages, _ in recording.calls]
    assert max(sizes) <= budget.prompt
    assert all(info and info.max_tokens == budget.completion for _, info in recording.calls)
    # and every answer's call sent the message it answers, last
    sent = recording.sent()
    assert [messages[-1].content for messages in sent] == [said(n) for n in range(1, 31)]
    # and the late calls left early turns out, with the summary of their compaction
    last = sent[-1]
    assert all(said(1) != m.content for m in last)
    summary = next(m.content for m in last if m.role == "system" and "not shown" in m.content)
    folded = Compaction.objects.filter(process_id=chat_id).order_by("last_index").last()
    assert folded is not None
    assert folded.summary[:80] in summary
    # and the REST detail shows what the last call sent, part by part
    detail = alice.api().get(f"/api/processes/tp_{chat_id}?messages=0").json()
    call = detail["lastCall"]
    assert call["window"] == WINDOW
    assert call["budget"] == budget.prompt
    assert call["step"] == "answer"
    parts = {part["name"]: part for part in call["parts"]}
    assert list(parts) == ["system", "summary", "recent", "recalled", "step"]
    assert parts["summary"]["leftOut"] > 0
    assert call["tokens"] == sum(part["tokens"] for part in call["parts"])
    assert call["tokens"] == tokens.messages(last)
    # and so does the process page
    web = Client()
    web.force_login(alice.user)
    page = web.get(f"/processes/tp_{chat_id}").content.decode()
    assert 'id="last-call-parts"' in page
    assert f"a {WINDOW}-token window" in page
    # with the summary in use
    assert 'id="compaction"' in page
    assert f"({folded.public_id}, messages {folded.first_index}–{folded.last_index}" in page


def test_a_long_chat_is_compacted_after_its_turns_and_its_calls_begin_the_same_way(
    alice, recording: RecordingProvider
):
    # given a ford chat on a model with a 1,024-token window
    session = ford_session(alice)
    chat_id = session.chat_process_id
    assert chat_id is not None
    # when the person chats for 30 turns of about 15 words
    for n in range(1, 31):
        chat(session, f"turn {n}: " + " ".join(f"word{i}" for i in range(15)))
    wait_until(lambda: not ThinkProcess.objects.get(pk=chat_id).lease_owner)
    # then the conversation was folded in a few compactions, each going on from the last
    folds = list(Compaction.objects.filter(process_id=chat_id).order_by("last_index"))
    assert 1 <= len(folds) <= 6
    assert folds[0].first_index == 0
    for earlier, later in itertools.pairwise(folds):
        assert later.first_index == earlier.last_index + 1
        assert later.messages > earlier.messages
    assert {fold.method for fold in folds} == {"llm"}
    assert all(fold.turns >= 1 and fold.summary for fold in folds)
    # by a `compact` step of its own, whose text never reached the chat
    compacts = [info for _, info in recording.calls if info and info.step == "compact"]
    assert len(compacts) >= len(folds)
    deltas = SessionEvent.objects.filter(session_id=session.pk, event="chat-delta")
    assert not any("The messages to add to it" in e.data["text"] for e in deltas)
    # and nothing was deleted, and the compact calls count in the process's usage
    assert ConversationMessage.objects.filter(process_id=chat_id).count() == 60
    row = ThinkProcess.objects.get(pk=chat_id)
    assert row.llm_calls == 30 + len(compacts)
    # and most answers' calls begin as the one before did (the summary changes only at a fold)
    sent = recording.sent()
    same = sum(1 for a, b in itertools.pairwise(sent) if a[:2] == b[:2])
    assert same >= len(sent) - 1 - 2 * len(folds)


def test_a_chat_on_a_model_of_unknown_window_is_sent_whole_and_records_nothing(alice, settings):
    # given the scripted provider and no window set (the embedded default)
    settings.VANCETOPE_LLM_CONTEXT_WINDOW = 0
    session = ford_session(alice)
    # when the person chats
    chat(session, "hello")
    # then nothing is recorded of the call
    detail = alice.api().get(f"/api/processes/tp_{session.chat_process_id}").json()
    assert detail["lastCall"] is None
