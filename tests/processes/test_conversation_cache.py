"""The conversation cache: a turn reads only what it must, and never a stale conversation."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.actions.create import create_process
from processes.actions.lifecycle import reset_process, start_process, stop_process
from processes.capabilities import conversation_cache
from processes.capabilities.conversation import ConversationBuffer
from processes.models import ThinkProcess
from sessions_app.services import FingerprintData, create_session
from tests.conftest import wait_until
from vancetope.llm.base import LlmMessage

pytestmark = pytest.mark.django_db(transaction=True)


def worker_process(tenancy) -> ThinkProcess:
    session = create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )
    process = create_process(session, goal="alpha", engine="ford")
    answered(process.pk)
    return process


def answered(process_id: int) -> None:
    """Its goal's turn (queued by its start) has committed the question and the answer."""
    wait_until(lambda: ThinkProcess.objects.get(pk=process_id).conversation_length == 2)


def test_history_of_the_last_committed_turn_is_reused_without_a_query(alice):
    process = ThinkProcess.objects.get(pk=worker_process(alice).pk)
    with CaptureQueriesContext(connection) as queries:
        history = ConversationBuffer(process).history()
    assert [m.content for m in history] == ["alpha", "echo: alpha"]
    assert not [q for q in queries if "conversationmessage" in q["sql"].lower()]


def test_a_reset_conversation_of_the_same_length_is_read_again(alice):
    process = worker_process(alice)
    stop_process(process.pk)
    reset_process(process.pk)
    # another worker OS process (no shared cache) starts it again with a new answer
    ThinkProcess.objects.filter(pk=process.pk).update(goal="omega")
    conversation_cache.put(
        process.pk, 0, (LlmMessage("user", "alpha"), LlmMessage("assistant", "echo: alpha"))
    )
    start_process(process.pk)
    answered(process.pk)
    conversation_cache.clear()
    conversation_cache.put(
        process.pk, 0, (LlmMessage("user", "alpha"), LlmMessage("assistant", "echo: alpha"))
    )
    # when a turn reads the history, the stale copy of epoch 0 is not used
    fresh = ThinkProcess.objects.get(pk=process.pk)
    assert (fresh.conversation_epoch, fresh.conversation_length) == (1, 2)
    history = ConversationBuffer(fresh).history()
    assert [m.content for m in history] == ["omega", "echo: omega"]
