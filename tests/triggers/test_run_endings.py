"""How system runs end: a workflow whose engine rests IDLE finishes its run and closes its
session; an APPROVAL asked by a run's task notifies the run's owner and is counted."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from inbox.models import InboxKind
from inbox.services import post_item
from processes.models import ThinkProcess
from processes.states import Status
from sessions_app.models import Session, SessionStatus
from tests.support.tenancy import open_session as open_service_session
from tests.support.waiting import wait_until
from tests.support.ws import bearer, connect, open_session
from tests.triggers.helpers import REVIEW, create_workflow, finished_run
from triggers.models import Notification, RunLog, RunStatus, RunTransition, TriggerType

# A ford workflow answers its goal and stays IDLE (it never closes itself).
IDLE_WORKFLOW = {**REVIEW, "name": "ask", "engine": "ford"}


@pytest.mark.django_db(transaction=True)
def test_a_workflow_whose_engine_rests_idle_completes_its_run_and_closes_its_session(alice, script):
    # given a ford workflow and the answer to its goal
    script([{"engine": "ford", "reply": "Saturn has rings."}])
    workflow_id = create_workflow(alice, IDLE_WORKFLOW)
    # when alice runs it
    started = alice.api().post(
        f"/api/workflows/{workflow_id}/run", {"input": {"topic": "Saturn"}}, format="json"
    )
    assert started.status_code == 201, started.json()
    # then the run completes when its process comes to rest IDLE, with what it spent
    run = finished_run(started.json()["runId"])
    assert run.status == RunStatus.COMPLETED
    assert (run.tasks_executed, run.llm_calls) == (1, 1)
    assert run.tokens_used > 0
    assert [(t.from_status, t.to_status) for t in RunTransition.objects.filter(run=run)] == [
        ("", "running"),
        ("running", "completed"),
    ]
    # and the system session it opened closes (which stops the idle process)
    assert wait_until(lambda: Session.objects.get(pk=run.session_id).status == SessionStatus.CLOSED)
    process = ThinkProcess.objects.get(pk=run.process_id)
    assert process.status == Status.CLOSED
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_approval_asked_by_a_runs_task_notifies_the_owner_and_is_counted(alice):
    # given alice's open socket and a run blocked on its question (its process stays open)
    client = await connect(bearer(alice))
    await open_session(client, alice)
    body = {**REVIEW, "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which?"}]}
    workflow_id = await database_sync_to_async(create_workflow)(alice, body)
    response = await database_sync_to_async(alice.api().post)(
        f"/api/workflows/{workflow_id}/run", {"input": {"topic": "Saturn"}}, format="json"
    )
    run = await database_sync_to_async(finished_run)(response.json()["runId"])
    assert run.notifications_sent == 1  # the blocked notice
    process = await database_sync_to_async(ThinkProcess.objects.get)(pk=run.process_id)
    # when a task of the run asks for approval
    item = await database_sync_to_async(post_item)(
        process, InboxKind.APPROVAL, "Publish the review?", "It is ready."
    )
    # then alice's socket hears a notification naming the item and the run
    notice = await client.event("notification", runId=run.public_id, level="warning")
    while item.public_id not in notice["data"]["text"]:
        notice = await client.event("notification", after=notice["seq"], runId=run.public_id)
    assert notice["data"]["text"] == (
        f"{process.public_id} asks for your approval: Publish the review? "
        f"(answer {item.public_id} in the inbox), in {run.public_id}"
    )
    assert notice["data"]["processId"] == process.public_id
    # it is stored for her, and the run counts it
    notice_pk = int(notice["data"]["id"].removeprefix("ntf_"))
    stored = await database_sync_to_async(Notification.objects.get)(pk=notice_pk)
    assert (stored.user_id, stored.run_id) == (alice.user.pk, run.pk)
    await database_sync_to_async(run.refresh_from_db)()
    assert run.notifications_sent == 2
    await client.ws.disconnect()


@pytest.mark.django_db(transaction=True)
def test_an_approval_in_a_persons_session_counts_in_their_run(alice, monkeypatch):
    # given alice's chat process with one finished run
    from processes.actions import steer
    from processes.lane import dispatch
    from processes.lane.driver import drive_lane

    monkeypatch.setattr(dispatch, "dispatch_drive", lambda process_id: None)
    session = open_service_session(alice)
    steer.send_chat(session.pk, "hello")
    drive_lane(session.chat_process_id)
    [run] = RunLog.objects.filter(process_id=session.chat_process_id)
    process = ThinkProcess.objects.get(pk=session.chat_process_id)
    # when the process asks for approval
    item = post_item(process, InboxKind.APPROVAL, "Delete the branch?", "")
    # then alice is notified, naming the item, and her run counts it
    notice = Notification.objects.get(user=alice.user)
    assert item.public_id in notice.text
    assert notice.run_id == run.pk
    run.refresh_from_db()
    assert (run.trigger_type, run.notifications_sent) == (TriggerType.USER, 1)


@pytest.mark.django_db(transaction=True)
def test_a_question_is_not_an_approval_and_notifies_nobody(alice, monkeypatch):
    from processes.lane import dispatch

    monkeypatch.setattr(dispatch, "dispatch_drive", lambda process_id: None)
    session = open_service_session(alice)
    process = ThinkProcess.objects.get(pk=session.chat_process_id)
    post_item(process, InboxKind.QUESTION, "Which one?", "")
    assert not Notification.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_idle_run_process_is_at_rest_only_once_every_closed_childs_report_reached_it(
    alice, monkeypatch
):
    # given an IDLE process of a run with one child, not started (its lanes are not run here)
    from processes.actions.create import create_process
    from processes.lane import dispatch
    from processes.models import PendingKind, PendingMessage
    from triggers.runs.system import at_rest

    monkeypatch.setattr(dispatch, "dispatch_drive", lambda process_id: None)
    session = open_service_session(alice, "workflow", system=True)
    parent = create_process(session, goal="g", engine="ford", params={"runId": "run_1"})
    parent.status = Status.IDLE
    ThinkProcess.objects.filter(pk=parent.pk).update(status=Status.IDLE)
    PendingMessage.objects.filter(process=parent).update(consumed=True)
    child = create_process(session, goal="c", engine="ford", parent=parent, start=False)
    # then an open child keeps it from rest
    assert not at_rest(parent)
    # and a child that closed but whose report has not arrived yet does too
    ThinkProcess.objects.filter(pk=child.pk).update(status=Status.CLOSED, close_reason="DONE")
    assert not at_rest(parent)
    # once its report is there (consumed or not), the parent is at rest
    PendingMessage.objects.create(
        process=parent,
        seq=99,
        kind=PendingKind.PARENT_REPORT,
        payload={"childId": child.public_id, "event": "DONE"},
        consumed=True,
    )
    assert at_rest(parent)
    # but not while a task of its tree is still open
    parent.engine_state = {
        "taskTree": {
            "rootId": "n1",
            "nodes": [
                {"id": "n1", "kind": "PLAN", "title": "plan", "status": "DONE"},
                {"id": "n2", "parentId": "n1", "kind": "WORKER", "title": "a", "status": "PENDING"},
            ],
        }
    }
    assert not at_rest(parent)
