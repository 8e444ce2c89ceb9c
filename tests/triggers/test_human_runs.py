"""Run logs of a person's sessions (trigger `user`): one run per wake of a process, written by
the lane's commits; children count in their root's run."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from processes.actions import steer
from processes.lane.driver import drive_lane
from processes.models import ThinkProcess
from processes.states import Status
from sessions_app.models import Session, SessionEvent
from tests.support.tenancy import open_session as open_service_session
from tests.support.waiting import wait_until
from tests.support.ws import bearer, connect, open_session
from triggers.models import RunLog, RunStatus, RunTransition


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_chat_turn_over_the_websocket_is_one_completed_user_run_with_its_tokens(alice):
    # given alice's cli session
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    chat_id = created["chatProcessId"]
    # when she chats once
    await client.request("chat", {"text": "hello"})
    await client.event("chat-message", role="assistant")
    await client.event("process-status", processId=chat_id, status="IDLE")

    # then that turn is one run of hers, completed, with what the turn spent
    def stored() -> list[RunLog]:
        return list(RunLog.objects.filter(process_public_id=chat_id))

    runs = await database_sync_to_async(lambda: wait_until(stored))()
    process = await database_sync_to_async(ThinkProcess.objects.get)(
        pk=int(chat_id.removeprefix("tp_"))
    )
    assert len(runs) == 1
    run = runs[0]
    assert (run.trigger_type, run.client_type, run.status) == ("user", "cli", "completed")
    assert (run.owner_id, run.session_id) == (alice.user.pk, process.session_id)
    assert run.tasks_executed == 1
    assert run.tokens_used == process.prompt_tokens + process.completion_tokens > 0
    assert run.llm_calls == process.llm_calls == 1
    assert run.started_at <= run.finished_at
    # and over REST it is a `user` run of her session
    listed = await database_sync_to_async(alice.api().get)("/api/runs?trigger=user")
    [shown] = listed.json()["results"]
    assert shown["trigger"] == {"type": "user"}
    assert (shown["sessionId"], shown["scope"]["processId"]) == (
        created["session"]["id"],
        chat_id,
    )
    # a person's run records no RunTransition rows: its record is its process's transitions
    assert not await database_sync_to_async(RunTransition.objects.filter(run=run).exists)()
    await client.ws.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_persons_run_is_announced_once_finished_in_the_session_it_runs_in(alice):
    # given alice with two open sessions: the cli she chats in and another (a web page's)
    chatting = await connect(bearer(alice))
    created = await open_session(chatting, alice)
    watching = await connect(bearer(alice))
    other = await open_session(watching, alice)
    # when she chats once in the first
    await chatting.request("chat", {"text": "hello"})
    # then that session hears of her run, finished, as REST shows it
    heard = await chatting.event("run")
    listed = await database_sync_to_async(alice.api().get)("/api/runs?trigger=user")
    [shown] = listed.json()["results"]
    assert heard["data"]["run"] == shown
    assert shown["status"] == "completed"
    assert shown["scope"]["processId"] == created["chatProcessId"]
    assert shown["scope"]["projectId"] == alice.project_id
    # and a run of one turn is announced once: as it finished, after the answer
    await chatting.event("process-status", processId=created["chatProcessId"], status="IDLE")
    runs = [frame for frame in chatting.events if frame["event"] == "run"]
    assert len(runs) == 1
    answer = await chatting.event("chat-message", role="assistant")
    assert answer["seq"] < heard["seq"]
    # and her other session is not sent her chat's runs (it sees none of that chat either)
    other_pk = int(other["session"]["id"].removeprefix("sess_"))
    stored = database_sync_to_async(
        lambda: list(SessionEvent.objects.filter(session_id=other_pk, event="run"))
    )
    assert await stored() == []
    await chatting.ws.disconnect()
    await watching.ws.disconnect()


def chat_process_of(session: Session) -> int:
    assert session.chat_process_id is not None
    return session.chat_process_id


@pytest.fixture
def lane_here(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Wakes are recorded, and the test drives the lane itself."""
    from processes.lane import dispatch

    woken: list[int] = []
    monkeypatch.setattr(dispatch, "dispatch_drive", woken.append)
    return woken


@pytest.mark.django_db(transaction=True)
def test_one_wake_over_several_messages_is_one_run_stored_running_then_finished(
    alice: Any, lane_here: list[int]
):
    # given three messages waiting for alice's chat process
    session = open_service_session(alice)
    chat_id = chat_process_of(session)
    for text in ("one", "two", "three"):
        steer.send_chat(session.pk, text)
    # when the lane drains them in one wake
    assert drive_lane(chat_id) == 3
    # then they are one run of three turns, completed
    [run] = RunLog.objects.filter(process_id=chat_id)
    assert (run.status, run.tasks_executed, run.llm_calls) == (RunStatus.COMPLETED, 3, 3)
    process = ThinkProcess.objects.get(pk=chat_id)
    assert run.tokens_used == process.prompt_tokens + process.completion_tokens
    # and its session heard of it twice: when it started and when it ended
    announced = [
        event.data["run"]
        for event in SessionEvent.objects.filter(session=session, event="run").order_by("seq")
    ]
    assert [(shown["id"], shown["status"]) for shown in announced] == [
        (run.public_id, "running"),
        (run.public_id, "completed"),
    ]
    assert announced[1]["tasksExecuted"] == 3
    assert announced[1]["tokensUsed"] == run.tokens_used
    # and the next message is the next run
    steer.send_chat(session.pk, "four")
    assert drive_lane(chat_id) == 1
    assert RunLog.objects.filter(process_id=chat_id).count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_wake_whose_provider_fails_is_a_blocked_run_with_why(
    alice: Any, lane_here: list[int], script
):
    # given a provider script that fails every call
    script([{"error": "boom"}])
    session = open_service_session(alice)
    chat_id = chat_process_of(session)
    steer.send_chat(session.pk, "hello")
    # when the lane gives up on the message
    drive_lane(chat_id)
    process = ThinkProcess.objects.get(pk=chat_id)
    # then the run says how the wake ended: blocked, waiting for the provider, with why
    [run] = RunLog.objects.filter(process_id=chat_id)
    assert process.status == Status.BLOCKED
    assert run.status == RunStatus.BLOCKED
    assert run.blocked_reasons == [{"processId": process.public_id, "reason": process.last_error}]
    assert run.tasks_blocked == 1


@pytest.mark.django_db(transaction=True)
def test_a_run_that_blocked_goes_on_when_its_process_wakes_and_ends_as_it_ends(
    alice: Any, lane_here: list[int], script, settings
):
    # given a chat whose provider fails every try of its message: its run ends blocked
    settings.VANCETOPE_TURN_RETRY_SECONDS = 0.001
    script([{"match": "hello", "times": 3, "error": "boom"}])
    session = open_service_session(alice)
    chat_id = chat_process_of(session)
    steer.send_chat(session.pk, "hello")
    drive_lane(chat_id)
    [blocked] = RunLog.objects.filter(process_id=chat_id)
    assert (blocked.status, blocked.tasks_blocked) == (RunStatus.BLOCKED, 1)
    # when the provider is back and the process wakes (its message was kept)
    steer.send_chat(session.pk, "again")
    drive_lane(chat_id)
    # then the same run went on and ended completed, counting both wakes' work; before, it
    # stayed "blocked, waiting" beside a new run, after the process had answered
    [run] = RunLog.objects.filter(process_id=chat_id)
    assert run.pk == blocked.pk
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.IDLE
    assert (run.status, run.tasks_blocked, run.blocked_reasons) == (RunStatus.COMPLETED, 0, [])
    assert run.tasks_executed == 2
    assert run.finished_at is not None
    # and its session heard it go on and end
    announced = [
        event.data["run"]["status"]
        for event in SessionEvent.objects.filter(session=session, event="run").order_by("seq")
    ]
    assert announced[-2:] == ["running", "completed"]
    # and a later wake from IDLE is a run of its own
    steer.send_chat(session.pk, "once more")
    drive_lane(chat_id)
    assert RunLog.objects.filter(process_id=chat_id).count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_system_sessions_processes_write_no_user_run(alice: Any, lane_here: list[int]):
    # given a system session's chat process
    session = open_service_session(alice, "cron", system=True)
    chat_id = chat_process_of(session)
    # when it runs a turn
    steer.send_chat(session.pk, "hello")
    assert drive_lane(chat_id) == 1
    # then no run log of a person is written for it (its run is the cron job's)
    assert ThinkProcess.objects.get(pk=chat_id).llm_calls == 1
    assert not RunLog.objects.exists()
