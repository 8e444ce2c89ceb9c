"""The lifecycle service: status table, lanes, pending queue, nothing lost."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from engines.registry import _registry
from processes import recovery
from processes.actions import create, lifecycle, steer
from processes.actions.sessions import close_session
from processes.lane import lease as lanes
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import SessionEvent
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.errors import Conflict, NotFound

pytestmark = pytest.mark.django_db(transaction=True)


def conversation(process_id: int) -> list[tuple[str, str]]:
    rows = ConversationMessage.objects.filter(process_id=process_id).order_by("index")
    return [(row.role, row.content) for row in rows]


def idle_with_messages(process_id: int, count: int):
    def check():
        process = ThinkProcess.objects.get(pk=process_id)
        return process.status == Status.IDLE and process.conversation_length >= count

    return check


def slow_script(tmp_path: Path, settings, delay: float) -> None:
    script = tmp_path / "slow.yaml"
    script.write_text(yaml.safe_dump([{"match": "slow", "reply": "a slow answer", "delay": delay}]))
    settings.VANCETOPE_LLM_SCRIPT = str(script)


def test_session_create_starts_its_chat_process_idle(alice):
    # when
    session = open_session(alice)
    # then
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    assert chat.status == Status.IDLE
    assert chat.think_engine == "arthur"
    assert chat.recipe_snapshot["name"] == "arthur"
    calls = list(ProcessTransition.objects.filter(process=chat).values_list("call", "to_status"))
    assert calls == [("start", "IDLE")]


def test_chat_message_is_answered_and_stored_in_the_conversation(alice):
    # given
    session = open_session(alice)
    # when
    steered = steer.send_chat(session.pk, "hello")
    # then
    assert steered.pending == 1
    wait_until(idle_with_messages(session.chat_process_id, 2))
    assert conversation(session.chat_process_id) == [
        ("user", "hello"),
        ("assistant", "echo: hello"),
    ]
    message = PendingMessage.objects.get(pk=steered.message.pk)
    assert message.consumed
    assert message.consumed_fence is not None
    events = list(
        SessionEvent.objects.filter(session=session).order_by("seq").values_list("event", "data")
    )
    # the two words streamed at once are joined into one delta
    assert "".join(data["text"] for event, data in events if event == "chat-delta") == "echo: hello"
    assert [event for event, _ in events][-5:] == [
        "chat-message",
        "chat-delta",
        "chat-message",
        "process-status",
        "run",  # the turn was a run of alice's, finished
    ]
    process = ThinkProcess.objects.get(pk=session.chat_process_id)
    assert process.prompt_tokens > 0
    assert process.completion_tokens == 2


def stored_deltas(session) -> list[str]:
    rows = SessionEvent.objects.filter(session=session, event="chat-delta").order_by("seq")
    return [row.data["text"] for row in rows]


def test_a_slow_stream_goes_out_delta_by_delta(alice, tmp_path, settings):
    # given: a reply streamed a word every 60 ms, deltas stored at most every 20 ms
    settings.VANCETOPE_DELTA_INTERVAL_SECONDS = 0.02
    script = tmp_path / "slow.yaml"
    rule = {"match": "slow", "reply": "one two three four", "delay_per_delta": 0.06}
    script.write_text(yaml.safe_dump([rule]))
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    session = open_session(alice)
    # when
    steer.send_chat(session.pk, "slow")
    wait_until(idle_with_messages(session.chat_process_id, 2))
    # then: each word is its own event, nothing held back
    assert stored_deltas(session) == ["one ", "two ", "three ", "four"]


def test_a_fast_stream_is_joined_into_few_deltas(alice, tmp_path, settings):
    # given: a 200-word reply streamed at once, deltas stored at most every 10 s
    settings.VANCETOPE_DELTA_INTERVAL_SECONDS = 10
    reply = " ".join(f"word{n}" for n in range(200))
    script = tmp_path / "fast.yaml"
    script.write_text(yaml.safe_dump([{"match": "fast", "reply": reply}]))
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    session = open_session(alice)
    # when
    steer.send_chat(session.pk, "fast")
    wait_until(idle_with_messages(session.chat_process_id, 2))
    # then: one delta event carries the whole text, stored before the final message
    assert stored_deltas(session) == [reply]
    events = list(SessionEvent.objects.filter(session=session).order_by("seq"))
    names = [event.event for event in events]
    assert names.index("chat-delta") < len(names) - 2
    # (then the process goes IDLE, and its run is announced finished)
    assert [event.event for event in events[-3:]] == ["chat-message", "process-status", "run"]
    assert events[-3].data["text"] == reply


def test_event_seq_grows_by_one_without_gaps(alice):
    session = open_session(alice)
    for text in ("one", "two", "three"):
        steer.send_chat(session.pk, text)
    wait_until(idle_with_messages(session.chat_process_id, 6))
    seqs = list(
        SessionEvent.objects.filter(session=session).order_by("seq").values_list("seq", flat=True)
    )
    assert seqs == list(range(1, len(seqs) + 1))


def test_messages_are_consumed_in_sequence_order_exactly_once(alice):
    session = open_session(alice)
    texts = [f"message {n}" for n in range(15)]
    for text in texts:
        steer.send_chat(session.pk, text)
    wait_until(idle_with_messages(session.chat_process_id, 30))
    users = [content for role, content in conversation(session.chat_process_id) if role == "user"]
    assert users == texts
    assert not PendingMessage.objects.filter(
        process_id=session.chat_process_id, consumed=False
    ).exists()


def test_worker_process_with_goal_answers_it_in_its_first_turn(alice):
    session = open_session(alice)
    # when
    process = create.create_process(session, goal="what is 6 x 7?", engine="ford")
    # then its start returns at once, the goal queued for its first turn, which answers it
    assert process.status == Status.IDLE
    first = PendingMessage.objects.get(process_id=process.pk)
    assert (first.seq, first.kind, first.text) == (1, "CONTROL", "what is 6 x 7?")
    wait_until(idle_with_messages(process.pk, 2))
    assert conversation(process.pk) == [
        ("user", "what is 6 x 7?"),
        ("assistant", "echo: what is 6 x 7?"),
    ]


def test_steer_on_paused_process_waits_for_resume(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    lifecycle.pause_process(chat_id)
    # when
    steered = steer.steer_process(chat_id, "later, please")
    # then: it waits in the pending queue
    assert steered.pending == 1
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.PAUSED
    assert conversation(chat_id) == []
    # when resumed, it is drained
    lifecycle.resume_process(chat_id)
    wait_until(idle_with_messages(chat_id, 2))
    assert conversation(chat_id)[-1] == ("assistant", "echo: later, please")


def test_steer_on_stopped_process_is_refused_and_changes_nothing(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    lifecycle.stop_process(chat_id)
    before = ThinkProcess.objects.get(pk=chat_id)
    # when
    with pytest.raises(Conflict, match="it is CLOSED/STOPPED"):
        steer.steer_process(chat_id, "are you there?")
    # then
    after = ThinkProcess.objects.get(pk=chat_id)
    assert (after.status, after.close_reason, after.updated_at) == (
        before.status,
        before.close_reason,
        before.updated_at,
    )
    assert not PendingMessage.objects.filter(process_id=chat_id).exists()


@pytest.mark.parametrize(
    ("setup", "call", "expected"),
    [
        ([], "resume_process", "cannot resume process tp_{id}: it is IDLE"),
        ([], "start_process", "cannot start process tp_{id}: it is IDLE"),
        ([], "reset_process", "cannot reset process tp_{id}: it is IDLE"),
        (["pause_process"], "pause_process", "cannot pause process tp_{id}: it is PAUSED"),
        (["stop_process"], "stop_process", "cannot stop process tp_{id}: it is CLOSED/STOPPED"),
    ],
)
def test_illegal_lifecycle_call_is_refused_with_409_and_nothing_changes(
    alice, setup, call, expected
):
    session = open_session(alice)
    chat_id = session.chat_process_id
    for step in setup:
        getattr(lifecycle, step)(chat_id)
    before = ThinkProcess.objects.get(pk=chat_id)
    transitions = ProcessTransition.objects.filter(process_id=chat_id).count()
    with pytest.raises(Conflict) as refused:
        getattr(lifecycle, call)(chat_id)
    assert refused.value.code == 409
    assert refused.value.message == expected.format(id=chat_id)
    after = ThinkProcess.objects.get(pk=chat_id)
    assert (after.status, after.updated_at) == (before.status, before.updated_at)
    assert ProcessTransition.objects.filter(process_id=chat_id).count() == transitions


def test_reset_returns_a_stopped_process_to_init_with_the_same_goal(alice):
    session = open_session(alice)
    process = create.create_process(session, goal="count sheep", engine="ford")
    lifecycle.stop_process(process.pk)
    # when
    reset = lifecycle.reset_process(process.pk)
    # then
    assert (reset.status, reset.close_reason, reset.goal) == (Status.INIT, "", "count sheep")
    assert conversation(process.pk) == []
    started = lifecycle.start_process(process.pk)
    assert started.status == Status.IDLE
    wait_until(idle_with_messages(process.pk, 2))
    assert conversation(process.pk) == [("user", "count sheep"), ("assistant", "echo: count sheep")]


def test_suspend_and_resume_keep_pending_messages(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    lifecycle.suspend_process(chat_id)
    with pytest.raises(Conflict):
        steer.steer_process(chat_id, "while suspended")
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.SUSPENDED
    resumed = lifecycle.resume_process(chat_id)
    assert resumed.status == Status.IDLE


def test_pause_during_a_slow_turn_stops_at_the_boundary_and_loses_nothing(
    alice, settings, tmp_path
):
    # given a turn that takes a while
    slow_script(tmp_path, settings, delay=0.6)
    session = open_session(alice)
    chat_id = session.chat_process_id
    steer.send_chat(session.pk, "slow please")
    wait_until(lambda: ThinkProcess.objects.get(pk=chat_id).status == Status.RUNNING)
    # when
    paused = lifecycle.pause_process(chat_id)
    # then
    assert paused.status == Status.PAUSED
    pending = PendingMessage.objects.get(process_id=chat_id)
    consumed_before_resume = pending.consumed
    lifecycle.resume_process(chat_id)
    wait_until(idle_with_messages(chat_id, 2), timeout=15)
    assert conversation(chat_id)[-1] == ("assistant", "a slow answer")
    # The message was consumed exactly once: either the turn finished before the boundary, or
    # it was interrupted, left pending, and answered after resume.
    users = [content for role, content in conversation(chat_id) if role == "user"]
    assert users == ["slow please"]
    assert consumed_before_resume in (True, False)
    assert PendingMessage.objects.get(process_id=chat_id).consumed


def test_a_worker_that_lost_its_lease_cannot_commit(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    stale = lanes.try_acquire(chat_id)
    assert stale is not None
    # another worker takes over after expiry
    ThinkProcess.objects.filter(pk=chat_id).update(
        lease_expires_at=stale.expires_at.replace(year=2000)
    )
    fresh = lanes.try_acquire(chat_id)
    assert fresh is not None
    assert fresh.fence == stale.fence + 1
    # then the stale holder's fenced writes change nothing
    assert stale.fenced().update(status=Status.CLOSED) == 0
    with pytest.raises(lanes.LeaseLost):
        lanes.heartbeat(stale)
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.IDLE
    lanes.release(fresh)


def test_lane_is_exclusive_while_held(alice):
    session = open_session(alice)
    lease = lanes.try_acquire(session.chat_process_id)
    assert lease is not None
    assert lanes.try_acquire(session.chat_process_id) is None
    lanes.release(lease)
    assert lanes.try_acquire(session.chat_process_id) is not None


def test_process_of_an_unregistered_engine_goes_stale_and_is_not_resumed(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    ThinkProcess.objects.filter(pk=chat_id).update(think_engine="slartibartfast")
    with pytest.raises(Conflict, match="CLOSED/STALE"):
        lifecycle.pause_process(chat_id)
    process = ThinkProcess.objects.get(pk=chat_id)
    assert (process.status, process.close_reason) == (Status.CLOSED, CloseReason.STALE)
    with pytest.raises(Conflict):
        lifecycle.resume_process(chat_id)


def test_process_with_an_incompatible_major_version_is_closed_stale_at_recovery(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    assert "ford" in _registry
    ThinkProcess.objects.filter(pk=chat_id).update(engine_version="0.9.0")
    report = recovery.recover_processes()
    assert report.expired == 1
    process = ThinkProcess.objects.get(pk=chat_id)
    assert (process.status, process.close_reason) == (Status.CLOSED, CloseReason.STALE)


def test_recovery_brings_back_a_process_left_running_by_a_dead_worker(alice):
    # given a process RUNNING under a lease whose owner process no longer exists
    session = open_session(alice)
    chat_id = session.chat_process_id
    ThinkProcess.objects.filter(pk=chat_id).update(
        status=Status.RUNNING,
        lease_owner=f"{lanes.HOSTNAME}:999999:1:dead",
        lease_fence=7,
        lease_expires_at=ThinkProcess.objects.get(pk=chat_id).updated_at.replace(year=2999),
    )
    PendingMessage.objects.create(process_id=chat_id, seq=1, kind="USER", payload={"text": "lost?"})
    ThinkProcess.objects.filter(pk=chat_id).update(next_pending_seq=2)
    # when
    report = recovery.recover_processes()
    # then it is IDLE again and its pending message is answered
    assert report.recovered == 1
    assert report.woken == 1
    wait_until(idle_with_messages(chat_id, 2))
    assert conversation(chat_id)[-1] == ("assistant", "echo: lost?")


def test_unknown_recipe_or_engine_is_a_clear_404(alice):
    session = open_session(alice)
    with pytest.raises(NotFound, match="no recipe for think engine 'marvin-9'"):
        create.create_process(session, goal="x", engine="marvin-9")
    with pytest.raises(NotFound, match="recipe 'nope'"):
        create.create_process(session, goal="x", recipe="nope")


def test_processes_of_a_closed_session_cannot_run_again(alice):
    # given a closed session (its processes are stopped)
    session = open_session(alice)
    chat_id = session.chat_process_id
    close_session(session.pk)
    # when reset would make the process INIT again, it is refused
    with pytest.raises(Conflict, match=f"its session sess_{session.pk} is CLOSED"):
        lifecycle.reset_process(chat_id)
    process = ThinkProcess.objects.get(pk=chat_id)
    assert (process.status, process.close_reason) == (Status.CLOSED, CloseReason.STOPPED)
    assert not PendingMessage.objects.filter(process_id=chat_id).exists()


def test_sweep_wakes_a_process_whose_wake_up_was_lost(alice):
    # given a pending message that no worker was told about
    session = open_session(alice)
    chat_id = session.chat_process_id
    PendingMessage.objects.create(process_id=chat_id, seq=1, kind="USER", payload={"text": "hi"})
    ThinkProcess.objects.filter(pk=chat_id).update(next_pending_seq=2)
    # when the sweep runs before the message is old enough, nothing happens
    assert recovery.recover_lanes(min_pending_age=timedelta(hours=1)).woken == 0
    # then once it is, the lane is woken and the message answered
    assert recovery.recover_lanes(min_pending_age=timedelta(0)).woken == 1
    wait_until(idle_with_messages(chat_id, 2))
    assert conversation(chat_id)[-1] == ("assistant", "echo: hi")


def test_sweep_recovers_a_running_process_whose_lease_expired(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    ThinkProcess.objects.filter(pk=chat_id).update(
        status=Status.RUNNING,
        lease_owner="other-host:1:1:gone",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )
    report = recovery.recover_lanes(min_pending_age=recovery.LOST_WAKE_AFTER)
    assert report.recovered == 1
    process = ThinkProcess.objects.get(pk=chat_id)
    assert (process.status, process.lease_owner) == (Status.IDLE, "")
    assert ProcessTransition.objects.filter(process_id=chat_id, call="recover").count() == 1


def test_sweep_leaves_a_running_process_with_a_live_lease_alone(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    ThinkProcess.objects.filter(pk=chat_id).update(
        status=Status.RUNNING,
        lease_owner="other-host:1:1:alive",
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )
    assert recovery.recover_lanes(min_pending_age=recovery.LOST_WAKE_AFTER).recovered == 0
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.RUNNING


def test_lease_keeper_keeps_a_long_turn_alive_past_the_lease_length(alice, settings):
    settings.VANCETOPE_LEASE_SECONDS = 0.3
    session = open_session(alice)
    lease = lanes.try_acquire(session.chat_process_id)
    with lanes.LeaseKeeper(lease) as keeper:
        time.sleep(1.0)
        assert not keeper.lost.is_set()
        # nobody can take the lane while it is kept
        assert lanes.try_acquire(session.chat_process_id) is None
    lanes.release(lease)


def test_lease_keeper_notices_a_lost_lease(alice, settings):
    settings.VANCETOPE_LEASE_SECONDS = 0.3
    session = open_session(alice)
    lease = lanes.try_acquire(session.chat_process_id)
    with lanes.LeaseKeeper(lease) as keeper:
        ThinkProcess.objects.filter(pk=session.chat_process_id).update(lease_owner="thief")
        wait_until(keeper.lost.is_set, timeout=3)


def test_leaving_a_kept_lease_waits_for_its_beat_in_flight(alice, settings, monkeypatch):
    # given a kept lease whose beat is being written when the holder leaves
    settings.VANCETOPE_LEASE_SECONDS = 0.3
    session = open_session(alice)
    lease = lanes.try_acquire(session.chat_process_id)
    in_beat, finish_beat, beats_done = threading.Event(), threading.Event(), []
    real_heartbeat = lanes.heartbeat

    def slow_heartbeat(held: lanes.Lease) -> None:
        in_beat.set()
        finish_beat.wait(5)
        real_heartbeat(held)
        beats_done.append(time.monotonic())

    monkeypatch.setattr(lanes, "heartbeat", slow_heartbeat)
    keeper = lanes.LeaseKeeper(lease).__enter__()
    assert in_beat.wait(3)
    # when the holder leaves while the beat is still being written
    left: list[float] = []
    leaving = threading.Thread(target=lambda: (keeper.__exit__(None, None, None), left.append(1)))
    leaving.start()
    time.sleep(0.2)
    # then it has not left yet; it leaves only after the beat's write, and no beat follows
    assert left == []
    finish_beat.set()
    leaving.join(3)
    assert left == [1]
    assert len(beats_done) == 1
    time.sleep(0.4)
    assert len(beats_done) == 1
    lanes.release(lease)
