"""A provider failure is never terminal for a process: after its attempts the process waits
(BLOCKED, with the error), its message kept, and the next message tries again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from engines import messages
from processes import recovery
from processes.actions import create, lifecycle, steer
from processes.lane import driver
from processes.models import ConversationMessage, PendingMessage, ThinkProcess
from processes.states import Status
from sessions_app.models import SessionEvent
from tests.conftest import open_session, wait_until
from vancetope.llm.base import CallInfo, LlmError, LlmMessage, LlmProvider, StreamItem, ToolSchema
from vancetope.llm.scripted import ScriptedProvider


class FlakyProvider(LlmProvider):
    """Fails every call while `down`, then answers as the scripted echo does."""

    name = "flaky"
    model = "flaky"

    def __init__(self) -> None:
        self.down = True
        self.calls = 0
        self._echo = ScriptedProvider()

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
    ) -> Iterator[StreamItem]:
        self.calls += 1
        if self.down:
            raise LlmError("connection to the provider refused")
        return self._echo.stream(messages, tools, info)


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> FlakyProvider:
    provider = FlakyProvider()
    monkeypatch.setattr("processes.lane.context.get_provider", lambda: provider)
    return provider


def settled(process_id: int, status: str) -> ThinkProcess:
    def check() -> ThinkProcess | None:
        row = ThinkProcess.objects.get(pk=process_id)
        return row if row.status == status and not row.lease_owner else None

    found = wait_until(check)
    assert found is not None
    return found


@pytest.mark.django_db(transaction=True)
def test_a_chat_whose_provider_is_down_waits_with_the_error_and_keeps_the_message(
    alice, flaky: FlakyProvider
):
    # given a chat session whose provider refuses every call
    session = open_session(alice)
    chat_id = session.chat_process_id
    assert chat_id is not None
    # when the person chats
    steer.send_chat(session.pk, "are you there?")
    # then after its attempts the chat process waits, saying why, and nothing is lost
    waiting = settled(chat_id, Status.BLOCKED)
    assert flaky.calls == driver.MAX_TURN_ATTEMPTS
    assert waiting.last_error == (
        "the LLM provider failed: LlmError: connection to the provider refused"
    )
    assert PendingMessage.objects.filter(process_id=chat_id, consumed=False).count() == 1
    notice = SessionEvent.objects.filter(session_id=session.pk, event="notification").last()
    assert notice is not None
    assert notice.data["level"] == "warning"
    assert "send another" in notice.data["text"]
    # and the sweep does not retry it on its own
    recovery.recover_lanes(min_pending_age=timedelta(0))
    settled(chat_id, Status.BLOCKED)
    assert flaky.calls == driver.MAX_TURN_ATTEMPTS
    # when the provider is back and the person writes again
    flaky.down = False
    steer.send_chat(session.pk, "hello?")
    # then both messages are answered, in order, and the error is gone
    idle = settled(chat_id, Status.IDLE)

    def answers() -> list[str]:
        rows = ConversationMessage.objects.filter(process_id=chat_id, role="assistant")
        return list(rows.order_by("index").values_list("content", flat=True))

    assert wait_until(lambda: len(answers()) == 2)
    assert answers() == ["echo: are you there?", "echo: hello?"]
    assert ThinkProcess.objects.get(pk=idle.pk).last_error == ""


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_provider_is_down_tells_its_parent_it_waits_and_why(
    alice, flaky: FlakyProvider
):
    # given a worker under a parent, both on a provider that is down
    session = open_session(alice)
    parent = create.create_process(session, goal="", engine="ford")
    # the parent only collects what it hears (paused before its worker exists, so the worker
    # is not paused with it)
    lifecycle.pause_process(parent.pk)
    worker = create.create_process(session, goal="", engine="ford", parent=parent)
    # when the worker is steered
    steer.steer_process(worker.pk, "do it")
    settled(worker.pk, Status.BLOCKED)
    # then its parent is told it is BLOCKED, with the provider's error
    report = wait_until(
        lambda: PendingMessage.objects.filter(process_id=parent.pk, kind="PARENT_REPORT").first()
    )
    assert report is not None
    payload: dict[str, Any] = report.payload
    assert payload["event"] == "BLOCKED"
    assert payload["error"].startswith("the LLM provider failed")
    # and the parent's engine reads it as a provider failure, not a question
    parsed = messages.parse(report.kind, report.seq, payload)
    assert isinstance(parsed, messages.ParentReport)
    assert parsed.provider_failed
