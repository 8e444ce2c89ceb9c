"""A chat message the chat process cannot take says what to do, not just "cannot steer"."""

from __future__ import annotations

import pytest

from processes.actions import lifecycle
from processes.actions.steer import send_chat
from processes.models import PendingMessage, ThinkProcess
from processes.states import CloseReason, Status
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.errors import Conflict

pytestmark = pytest.mark.django_db(transaction=True)


def idle_chat(tenancy) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    session = open_session(tenancy)
    chat = session.chat_process_id
    assert chat is not None
    wait_until(lambda: ThinkProcess.objects.get(pk=chat).status == Status.IDLE)
    return session.pk, chat


def refusal(session_id: int, chat: int) -> str:
    before = PendingMessage.objects.filter(process_id=chat).count()
    with pytest.raises(Conflict) as refused:
        send_chat(session_id, "hello?")
    assert PendingMessage.objects.filter(process_id=chat).count() == before  # nothing queued
    return refused.value.message


def test_a_chat_to_an_init_chat_process_says_to_start_it(alice):
    session_id, chat = idle_chat(alice)
    ThinkProcess.objects.filter(pk=chat).update(status=Status.INIT)
    assert refusal(session_id, chat) == (
        f"the chat process tp_{chat} has not started (INIT): /start it (process-start) to chat"
    )


def test_a_chat_to_a_suspended_chat_process_says_resume_or_reset(alice):
    session_id, chat = idle_chat(alice)
    lifecycle.suspend_process(chat)
    assert refusal(session_id, chat) == (
        f"the chat process tp_{chat} is SUSPENDED: /resume it (process-resume), "
        "or /reset to start it over"
    )


def test_a_chat_to_a_stopped_chat_process_says_reset_or_new_session(alice):
    session_id, chat = idle_chat(alice)
    lifecycle.stop_process(chat)
    assert refusal(session_id, chat) == (
        f"the chat process tp_{chat} is CLOSED/STOPPED: /reset it (process-reset) to start "
        "over, or start a new session (vance chat --new)"
    )


def test_a_chat_to_a_done_chat_process_says_new_session(alice):
    session_id, chat = idle_chat(alice)
    ThinkProcess.objects.filter(pk=chat).update(status=Status.CLOSED, close_reason=CloseReason.DONE)
    assert refusal(session_id, chat) == (
        f"the chat process tp_{chat} is CLOSED/DONE: start a new session (vance chat --new)"
    )


def test_a_chat_to_a_paused_chat_process_is_queued(alice):
    session_id, chat = idle_chat(alice)
    lifecycle.pause_process(chat)
    # when
    steered = send_chat(session_id, "later")
    # then it waits for resume
    assert steered.pending == 1
    assert ThinkProcess.objects.get(pk=chat).status == Status.PAUSED
