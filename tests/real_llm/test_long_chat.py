"""A long chat on a small window, against llama.cpp's own server started with `--n_ctx 2048`:
before the context budget, from turn 17 on the server cut every stream ("Requested tokens
exceed context window") and the Brain stored empty answers. Now every call is assembled within
the window, and what was said early is still in what is sent (the fold of the turns left out).
Structure only, never wording: every turn answered, no request over the window, the early fact
in what the late call sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from processes.actions import steer
from processes.models import Compaction, ConversationMessage, ThinkProcess
from processes.states import Status
from tests.config.helpers import ford_session
from tests.support.llama_server import LlamaServer
from tests.support.recording_llm import RecordingProvider
from tests.support.tenancy import Tenancy
from tests.support.tenancy import open_session as chat_session
from tests.support.waiting import wait_until
from vancetope.llm.factory import get_provider, reset_provider_cache
from vancetope.llm.local_model import default_model

pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = 2048
TURNS = 60
FACT = "my code word is PELICAN-42"


@pytest.fixture(scope="module")
def small_server() -> Iterator[LlamaServer]:
    model = default_model()
    assert model is not None  # the conftest skips the real-model tests without it
    with LlamaServer(model, context_tokens=WINDOW) as server:
        yield server


@pytest.fixture
def recording(
    settings: Any, small_server: LlamaServer, monkeypatch: pytest.MonkeyPatch
) -> RecordingProvider:
    settings.VANCETOPE_LLM = "openai"
    settings.OPENAI_BASE_URL = small_server.base_url
    settings.OPENAI_API_KEY = ""
    settings.VANCETOPE_LLM_MODEL = small_server.model
    settings.VANCETOPE_LLM_MAX_CONCURRENT = 1
    # llama-cpp-python's server does not say its window: the operator's setting does.
    settings.VANCETOPE_LLM_CONTEXT_WINDOW = WINDOW
    settings.VANCETOPE_LLM_TEMPERATURE = "0"
    settings.VANCETOPE_LLM_TIMEOUT = 300.0
    settings.VANCETOPE_LLM_MAX_TOKENS = 32  # sixty turns in about two minutes
    reset_provider_cache()
    recorder = RecordingProvider(real=get_provider())
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: recorder)
    return recorder


def say(n: int) -> str:
    if n == 3:
        return f"{FACT}. Please keep it in mind while we talk about other things."
    if n == TURNS:
        return "Now tell me again: what is my code word?"
    return f"Turn {n}. Tell me one short fact about the number {n} and a city you like."


def answered(session: Any, text: str) -> str:
    """Send `text` and wait for its turn to end; the turn's last answer. A turn right after a
    compaction (two or three calls folding a thousand tokens on two cores) can wait half a
    minute for the lane."""
    chat_id = session.chat_process_id
    before = ConversationMessage.objects.filter(process_id=chat_id).count()
    steer.send_chat(session.pk, text)

    def done() -> bool:
        row = ThinkProcess.objects.get(pk=chat_id)
        stored = ConversationMessage.objects.filter(process_id=chat_id).count()
        return row.status == Status.IDLE and not row.lease_owner and stored > before + 1

    wait_until(done, timeout=240)
    last = ConversationMessage.objects.filter(process_id=chat_id).order_by("-index").first()
    assert last is not None
    assert last.role == "assistant"
    return last.content


@pytest.mark.parametrize("recipe", ["ford", "arthur"])
def test_a_sixty_turn_chat_on_a_2048_token_window_answers_every_turn(
    alice: Tenancy, recording: RecordingProvider, recipe: str
) -> None:
    # given a chat (ford's, or arthur's with its tools) on SmolLM2 behind llama.cpp's server
    # with a 2,048-token window
    session = ford_session(alice) if recipe == "ford" else chat_session(alice)
    chat_id = session.chat_process_id
    assert chat_id is not None
    # when the person chats for sixty turns
    for n in range(1, TURNS + 1):
        answer = answered(session, say(n))
        # then every turn is answered, and the chat waits for the next message, no error
        row = ThinkProcess.objects.get(pk=chat_id)
        assert row.last_error == "", (n, row.last_error)
        assert answer.strip(), n
    # and no request was over the window: each call's prompt, by the server's own tokenizer,
    # left room for the answer
    last_call = ThinkProcess.objects.get(pk=chat_id).last_call
    assert last_call is not None
    assert last_call["window"] == WINDOW
    assert last_call["counted"] is True
    assert last_call["tokens"] <= last_call["budget"]
    parts = {part["name"]: part for part in last_call["parts"]}
    assert parts["summary"]["leftOut"] > 0
    # and the conversation was compacted, nothing deleted
    assert Compaction.objects.filter(process_id=chat_id).exists()
    users = ConversationMessage.objects.filter(process_id=chat_id, role="user")
    assert users.count() == TURNS
    # and the fact of turn 3 is in what the sixtieth call sent (recalled, or in the summary),
    # though turn 3 itself is folded
    last_sent = recording.sent("answer", "chat")[-1]  # ford's step, arthur's
    assert all(message.content != say(3) for message in last_sent)
    assert any(FACT in message.content for message in last_sent)
