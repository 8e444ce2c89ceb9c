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
from tests.support.tenancy import open_session
from tests.support.waiting import at_rest, wait_until
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
        *,
        force_tool: str | None = None,
    ) -> Iterator[StreamItem]:
        self.calls += 1
        if self.down:
            raise LlmError("connection to the provider refused")
        return self._echo.stream(messages, tools, info, force_tool=force_tool)


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> FlakyProvider:
    provider = FlakyProvider()
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: provider)
    return provider


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
    waiting = at_rest(chat_id, Status.BLOCKED)
    assert flaky.calls == driver.MAX_TURN_ATTEMPTS
    assert waiting.last_error == (
        "the LLM provider failed: LlmError: connection to the provider refused"
    )
    assert PendingMessage.objects.filter(process_id=chat_id, consumed=False).count() == 1
    notice = SessionEvent.objects.filter(session_id=session.pk, event="notification").last()
    assert notice is not None
    assert notice.data["level"] == "warning"
    assert "send process-resume" in notice.data["text"]
    # and the sweep does not retry it on its own
    recovery.recover_lanes(min_pending_age=timedelta(0))
    at_rest(chat_id, Status.BLOCKED)
    assert flaky.calls == driver.MAX_TURN_ATTEMPTS
    # when the provider is back and the person writes again
    flaky.down = False
    steer.send_chat(session.pk, "hello?")
    # then both messages are answered, in order, and the error is gone
    idle = at_rest(chat_id, Status.IDLE)

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
    at_rest(worker.pk, Status.BLOCKED)
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


@pytest.mark.django_db(transaction=True)
def test_a_worker_spawned_while_the_provider_is_down_waits_blocked_and_tells_its_parent(
    alice, flaky: FlakyProvider
):
    # given a parent, paused so that it only collects what it hears, and a provider that is down
    session = open_session(alice)
    parent = create.create_process(session, goal="", engine="ford")
    lifecycle.pause_process(parent.pk)
    # when it gets a frankie worker with a goal
    worker = create.create_process(session, goal="list the files", engine="frankie", parent=parent)
    # then the worker's first turn waits BLOCKED with the error, its goal kept
    blocked = at_rest(worker.pk, Status.BLOCKED)
    assert blocked.last_error.startswith("the LLM provider failed")
    assert blocked.waiting == 1
    report = wait_until(
        lambda: PendingMessage.objects.filter(process_id=parent.pk, kind="PARENT_REPORT").first()
    )
    assert report is not None
    assert report.payload["event"] == "BLOCKED"
    # when the provider is back and the next message wakes the worker, it does its goal once
    # (and, as a worker, finishes with it)
    flaky.down = False
    steer.steer_process(worker.pk, "try again")
    done = at_rest(worker.pk, Status.CLOSED)
    assert done.close_reason == "DONE"
    users = ConversationMessage.objects.filter(process_id=worker.pk, role="user")
    assert [m.content for m in users] == ["list the files"]


@pytest.mark.django_db(transaction=True)
def test_a_turn_retried_after_two_provider_failures_sends_the_users_message_once(
    alice, flaky: FlakyProvider, settings: Any
):
    # given a chat whose provider fails twice, then answers
    settings.VANCETOPE_TURN_RETRY_SECONDS = 0.01
    session = open_session(alice)
    chat_id = session.chat_process_id
    assert chat_id is not None
    original = flaky.stream

    def fail_twice(*args: Any, **kwargs: Any) -> Iterator[StreamItem]:
        flaky.down = flaky.calls < 2
        return original(*args, **kwargs)

    flaky.stream = fail_twice  # type: ignore[method-assign]
    # when the person says hello
    steer.send_chat(session.pk, "hello")
    wait_until(
        lambda: ConversationMessage.objects.filter(process_id=chat_id, role="assistant").exists()
    )
    at_rest(chat_id, Status.IDLE)
    # then the third attempt answered, and "hello" went out as one chat-message
    assert flaky.calls == 3
    sent = SessionEvent.objects.filter(session_id=session.pk, event="chat-message")
    assert [(e.data["role"], e.data["text"]) for e in sent.order_by("seq")] == [
        ("user", "hello"),
        ("assistant", "echo: hello"),
    ]
