"""A chat message accepted in a lane thread of the embedded Brain: the call's result goes back
at once, and the lane it woke is driven in that same thread; with no thread free the caller
makes the call its usual way, and nothing is lost either way."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.test import override_settings

from processes.actions.steer import send_chat
from processes.lane import tasks
from processes.lane import worker as workers
from processes.models import ConversationMessage, PendingMessage
from processes.states import Status
from tests.support.tenancy import open_session
from tests.support.waiting import settled, wait_until
from vancetope.errors import Conflict

pytestmark = pytest.mark.django_db(transaction=True)


class Answer:
    """What `done` was told, and when."""

    def __init__(self) -> None:
        self.told = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = ""

    def __call__(self, result: Any, error: BaseException | None) -> None:
        self.result, self.error = result, error
        self.thread = threading.current_thread().name
        self.told.set()


@pytest.fixture
def pool():  # type: ignore[no-untyped-def]
    workers.shutdown_worker(wait=True)
    with override_settings(VANCETOPE_INPROCESS_WORKER_THREADS=1):
        yield workers.get_worker()
    workers.shutdown_worker(wait=True)


def test_the_call_answers_and_its_lane_runs_in_the_same_thread(alice, pool, monkeypatch):
    session = open_session(alice)
    chat = session.chat_process_id
    settled(chat, Status.IDLE)
    driven: list[tuple[int, str]] = []
    drive = tasks.drive_lane_task.run

    def recorded(process_id: int) -> int:
        driven.append((process_id, threading.current_thread().name))
        return drive(process_id)

    monkeypatch.setattr(tasks.drive_lane_task, "run", recorded)
    jobs: list[object] = []
    submit = pool._submit

    def recorded_job(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        jobs.append(getattr(fn, "__name__", fn))
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(pool, "_submit", recorded_job)
    answer = Answer()
    # when
    assert pool.call_then_drive(lambda: send_chat(session.pk, "hello"), answer)
    # then: the caller hears of the accepted message, and the turn runs where the call ran
    assert answer.told.wait(10)
    assert answer.error is None
    assert answer.result.message.process_id == chat
    settled(chat, Status.IDLE)
    assert driven == [(chat, answer.thread)]
    # one job, the call's: its lane got no job of its own, so no second hop between threads
    assert jobs == ["_call_then_drive"]
    assert answer.thread.startswith("lane")
    replies = ConversationMessage.objects.filter(process_id=chat, role="assistant")
    assert [message.content for message in replies] == ["echo: hello"]


def test_with_no_thread_free_nothing_runs_and_the_caller_is_told_no(alice, pool, monkeypatch):
    # given: the pool's one thread is in a turn
    in_turn, go_on = threading.Event(), threading.Event()

    def long_turn(process_id: int) -> int:
        in_turn.set()
        go_on.wait(10)
        return 0

    monkeypatch.setattr(tasks.drive_lane_task, "run", long_turn)
    pool.submit(10_000)
    assert in_turn.wait(10)
    ran = threading.Event()
    # when
    refused = pool.call_then_drive(ran.set, Answer())
    # then: the call is not queued behind the turn
    assert refused is False
    go_on.set()
    assert not ran.wait(0.2)
    # and once the thread is free again, a call is taken
    answer = Answer()
    wait_until(lambda: pool.call_then_drive(lambda: "taken", answer), timeout=10)
    assert answer.told.wait(10)
    assert answer.result == "taken"


def test_a_refused_call_reaches_the_caller_and_queues_nothing(alice, pool):
    session = open_session(alice)
    chat = session.chat_process_id
    settled(chat, Status.IDLE)
    session.chat_process_id = None
    type(session).objects.filter(pk=session.pk).update(chat_process=None)
    answer = Answer()
    assert pool.call_then_drive(lambda: send_chat(session.pk, "lost?"), answer)
    assert answer.told.wait(10)
    assert isinstance(answer.error, Conflict)
    assert PendingMessage.objects.filter(process_id=chat, consumed=False).count() == 0


def test_wakes_of_a_call_that_failed_after_its_commit_are_driven(alice, pool):
    session = open_session(alice)
    chat = session.chat_process_id
    settled(chat, Status.IDLE)

    def commits_then_fails() -> None:
        send_chat(session.pk, "kept")
        raise RuntimeError("after the commit")

    answer = Answer()
    assert pool.call_then_drive(commits_then_fails, answer)
    assert answer.told.wait(10)
    assert isinstance(answer.error, RuntimeError)
    # the message was stored, so its turn runs all the same
    settled(chat, Status.IDLE)
    replies = ConversationMessage.objects.filter(process_id=chat, role="assistant")
    assert [message.content for message in replies] == ["echo: kept"]


def test_a_stopping_pool_takes_no_call(pool):
    pool.stopping.set()
    assert pool.call_then_drive(lambda: "never", Answer()) is False
