"""The conversation cache: a turn reads only what it must, and never a stale conversation."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.actions.create import create_process
from processes.actions.lifecycle import reset_process, start_process, stop_process
from processes.actions.sessions import create_session
from processes.capabilities import conversation_cache
from processes.capabilities.conversation import ConversationBuffer
from processes.models import ThinkProcess
from sessions_app.services import FingerprintData
from tests.support.waiting import wait_until
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


def short_chat(pk: int) -> tuple[LlmMessage, ...]:
    return (LlmMessage("user", f"hi {pk}"), LlmMessage("assistant", f"echo: hi {pk}"))


def test_a_thousand_chats_driven_in_turn_each_find_their_conversation_kept():
    # given a Brain whose 1,000 sockets chat in turn: each chat's turn keeps its conversation
    conversation_cache.clear()
    for pk in range(1, 1001):
        conversation_cache.put(pk, 0, short_chat(pk))
    # then the next round of turns finds every conversation, the first chat's too
    missing = [pk for pk in range(1, 1001) if conversation_cache.get(pk, 0, 2) is None]
    conversation_cache.clear()
    assert missing == []


def test_the_least_recently_used_conversations_go_once_the_budget_is_full(settings):
    # given a budget of 10 short chats (and half of one)
    conversation_cache.clear()
    chat = conversation_cache.size_of(short_chat(1))
    settings.VANCETOPE_CONVERSATION_CACHE_MB = 10.5 * chat / 2**20
    # when 11 are kept, the first having been used again after the second
    conversation_cache.put(1, 0, short_chat(1))
    conversation_cache.put(2, 0, short_chat(2))
    assert conversation_cache.get(1, 0, 2) is not None
    for pk in range(3, 12):
        conversation_cache.put(pk, 0, short_chat(pk))
    # then the one used least recently went, and the cache holds no more than its budget
    kept = [pk for pk in range(1, 12) if conversation_cache.get(pk, 0, 2) is not None]
    held = conversation_cache.held_bytes()
    conversation_cache.clear()
    assert kept == [1, *range(3, 12)]
    assert held <= conversation_cache.budget()


def test_a_continued_conversation_is_sized_as_a_whole_while_only_its_new_messages_are_measured():
    # given a kept conversation, and another kept beside it
    conversation_cache.clear()
    first = short_chat(1)
    conversation_cache.put(1, 0, first)
    conversation_cache.put(2, 0, short_chat(2))
    # when a turn continues the first (its committed messages plus two new ones)
    longer = first + short_chat(3)
    conversation_cache.put(1, 0, longer, extends=first)
    # then the cache holds what both conversations hold, as if each were measured whole
    held = conversation_cache.held_bytes()
    whole = conversation_cache.size_of(longer) + conversation_cache.size_of(short_chat(2))
    # and a continuation of messages no longer kept is measured whole too
    conversation_cache.put(1, 0, longer + short_chat(4), extends=first)
    held_after = conversation_cache.held_bytes()
    whole_after = conversation_cache.size_of(longer + short_chat(4)) + conversation_cache.size_of(
        short_chat(2)
    )
    conversation_cache.clear()
    assert held == whole
    assert held_after == whole_after
