"""Firing cron jobs: claimed once per (job, minute), overlap skipped with its reason, the other
actions, and a task that needs a client tool reported blocked (issue 13, "Done when")."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from inbox.models import InboxItem, InboxKind
from processes.actions.lifecycle import pause_process
from processes.actions.sessions import create_session, disconnect_session, suspend_session
from processes.actions.steer import steer_many
from processes.models import ThinkProcess
from processes.states import Status
from sessions_app.models import SessionStatus, SuspendCause
from sessions_app.services import register_tools
from tests.support.cron import continue_body, paused_with_pending
from tests.support.marvin import worker
from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until
from tests.triggers.helpers import REVIEW, create_workflow, finished_run
from triggers.cron import jobs as cron
from triggers.cron.fire import fire
from triggers.models import CronFiring, CronJob, FiringOutcome, RunLog, RunStatus
from triggers.tasks import fire_cron

pytestmark = pytest.mark.django_db(transaction=True)

NINE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def job_for(tenancy: Tenancy, body: dict[str, Any]) -> CronJob:
    return cron.create_job(tenancy.user, body)


def test_the_same_firing_twice_runs_once(alice):
    # given a job on a paused process
    chat_id = paused_with_pending(alice, 5)
    job = job_for(alice, continue_body(chat_id))
    # when the 09:00 firing arrives twice (two beats, or a redelivered task)
    first = fire(job.pk, NINE)
    second = fire(job.pk, NINE)
    # then it ran once
    assert first is not None
    assert first.outcome == FiringOutcome.RAN
    assert second is None
    assert CronFiring.objects.filter(job=job).count() == 1
    assert RunLog.objects.filter(cron_id=job.public_id).count() == 1
    finished_run(first.run.public_id)


def test_the_celery_task_claims_by_the_due_minute_of_the_schedule(alice):
    chat_id = paused_with_pending(alice, 5)
    job = job_for(alice, {**continue_body(chat_id), "schedule": "*/5 * * * *", "timezone": "UTC"})
    # a task run 40 seconds late, or three minutes into a five-minute schedule, is for 09:00
    assert cron.due_minute(job, datetime(2026, 12, 1, 9, 0, 40, tzinfo=UTC)) == NINE
    assert cron.due_minute(job, datetime(2026, 12, 1, 9, 3, 0, tzinfo=UTC)) == NINE
    # and the task called twice for the same moment runs once
    assert fire_cron(job.pk, "2026-12-01T09:00:00+00:00").startswith("ran: run_")
    assert fire_cron(job.pk, "2026-12-01T09:00:00+00:00") == "duplicate"
    assert RunLog.objects.filter(cron_id=job.public_id).count() == 1


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="two threads claiming at the same moment need PostgreSQL (DATABASE_URL)",
)
def test_two_threads_firing_the_same_moment_run_it_once(alice):
    chat_id = paused_with_pending(alice, 5)
    job = job_for(alice, continue_body(chat_id))
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def claim() -> None:
        try:
            barrier.wait()
            results.append(fire(job.pk, NINE))
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ran = [result for result in results if result is not None]
    assert len(results) == 2
    assert len(ran) == 1
    assert RunLog.objects.filter(cron_id=job.public_id).count() == 1
    finished_run(ran[0].run.public_id)


def test_a_firing_while_the_previous_run_still_runs_is_skipped_with_its_reason(alice, script):
    # given a job whose run is slow (each answer takes a second)
    script([{"match": "question", "reply": "slowly", "delay": 1.0}])
    chat_id = paused_with_pending(alice, 5)
    job = job_for(alice, continue_body(chat_id))
    first = fire(job.pk, NINE)
    assert first is not None
    assert first.run.status == RunStatus.RUNNING
    # when the next minute fires while it runs
    second = fire(job.pk, NINE.replace(minute=1))
    # then that firing is recorded as skipped, naming the running run, and nothing ran
    assert second is not None
    assert second.outcome == FiringOutcome.SKIPPED
    assert second.reason == f"skipped: the previous run {first.run.public_id} is still running"
    assert second.run is None
    assert RunLog.objects.filter(cron_id=job.public_id).count() == 1
    # and it is shown with the job
    firings = alice.api().get(f"/api/cron-jobs/{job.public_id}").json()["firings"]
    assert [(f["outcome"], f["reason"]) for f in firings][0] == ("skipped", second.reason)
    assert finished_run(first.run.public_id).tasks_executed == 3


@pytest.mark.parametrize("went", ["idle", "disconnected"])
def test_a_task_needing_a_client_tool_is_reported_blocked_with_its_reason(alice, script, went: str):
    # given a coding session whose client registered run_shell, then went away (suspended by
    # the idle sweep, or by its socket's disconnect, which before took the tool's declaration
    # with it, so the task was told there is no such tool and reported completed)
    script([{"match": "list the files", "tool_calls": [{"name": "run_shell", "arguments": {}}]}])
    session = create_session(
        alice.user, client_type="cli", project_id=alice.project_id, recipe="frankie-coding"
    )
    register_tools(session, [{"name": "run_shell", "parameters": {"type": "object"}}])
    chat_id = session.chat_process_id
    assert chat_id is not None
    pause_process(chat_id)
    steer_many(chat_id, ["list the files", "then summarise them"])
    if went == "idle":
        suspend_session(session.pk, SuspendCause.IDLE)
    else:
        disconnect_session(session.pk, SuspendCause.DISCONNECT, binding=session.binding)
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.SUSPENDED
    job = job_for(alice, continue_body(chat_id, stopOnClientTool=True))
    # when the cron job continues the process
    firing = fire(job.pk, NINE)
    # then the task waits for a client: BLOCKED with the tool named, its message still pending
    run = finished_run(firing.run.public_id)
    assert run.status == RunStatus.BLOCKED
    assert run.tasks_blocked == 1
    assert run.blocked_reasons == [
        {"processId": f"tp_{chat_id}", "reason": "requires client tool: run_shell"}
    ]
    process = ThinkProcess.objects.get(pk=chat_id)
    assert process.status == Status.BLOCKED
    assert process.last_error == "requires client tool: run_shell"
    assert process.waiting == 2
    assert process.session.status == SessionStatus.SUSPENDED
    # and the owner is told
    assert run.notifications.get().text.endswith("requires client tool: run_shell")


def test_a_run_workflow_job_runs_the_workflow_as_a_cron_client(alice, script):
    script(
        [
            *worker("find sources on Saturn", "Sources."),
            {"engine": "marvin", "step": "aggregate", "reply": "# Saturn"},
        ]
    )
    workflow_id = create_workflow(alice, REVIEW)
    body = {
        "schedule": "0 * * * *",
        "timezone": "UTC",
        "action": {"type": "run_workflow", "workflowId": workflow_id, "input": {"topic": "Saturn"}},
    }
    job = job_for(alice, body)
    firing = fire(job.pk, NINE)
    run = finished_run(firing.run.public_id)
    assert (run.trigger_type, run.client_type, run.cron_id) == ("cron", "cron", job.public_id)
    assert run.workflow_id == int(workflow_id.removeprefix("wf_"))
    assert run.status == RunStatus.COMPLETED
    assert run.owner == alice.user


def test_a_run_workflow_job_with_a_missing_input_is_a_400_naming_it(alice):
    workflow_id = create_workflow(alice, REVIEW)
    body = {
        "schedule": "0 * * * *",
        "action": {"type": "run_workflow", "workflowId": workflow_id, "input": {}},
    }
    response = alice.api().post("/api/cron-jobs", body, format="json")
    assert response.status_code == 400
    assert response.json()["message"].startswith("action.input.topic:")


def test_a_job_on_a_running_process_fails_with_the_reason(alice, script):
    script([{"match": "question", "reply": "slowly", "delay": 1.0}])
    chat_id = paused_with_pending(alice, 2)
    job = job_for(alice, {**continue_body(chat_id), "overlap": "allow"})
    first = fire(job.pk, NINE)
    wait_until(lambda: ThinkProcess.objects.get(pk=chat_id).status == Status.RUNNING)
    # overlap allow: the second firing runs, and is refused by the process's status
    second = fire(job.pk, NINE.replace(minute=1))
    assert second.outcome == FiringOutcome.FAILED
    assert "is RUNNING: process_continue continues a PAUSED, SUSPENDED or IDLE" in second.reason
    assert finished_run(first.run.public_id).status == RunStatus.COMPLETED


def test_stop_on_approval_ends_the_run_when_the_process_posts_an_approval(alice, script):
    # given a chat whose first task asks its person for an approval
    script(
        [
            {
                "match": "question 1",
                "times": 1,
                "tool_calls": [
                    {
                        "name": "inbox_post",
                        "arguments": {"kind": "APPROVAL", "title": "Deploy?", "body": "v2"},
                    }
                ],
            },
        ]
    )
    chat_id = paused_with_pending(alice, 5)
    job = job_for(alice, continue_body(chat_id, stopOnApproval=True))
    # when the job continues it for up to three tasks
    firing = fire(job.pk, NINE)
    run = finished_run(firing.run.public_id)
    # then the run stops after the task that posted the approval, and says what it waits for
    item = InboxItem.objects.get(origin_process_id=chat_id, kind=InboxKind.APPROVAL)
    assert run.status == RunStatus.BLOCKED
    assert run.tasks_executed == 1
    assert run.blocked_reasons == [
        {"processId": f"tp_{chat_id}", "reason": f"approval {item.public_id} waits for an answer"}
    ]
    process = wait_until(
        lambda: ThinkProcess.objects.filter(pk=chat_id, status=Status.PAUSED).first()
    )
    assert process.waiting == 4


def test_without_stop_on_client_tool_the_run_goes_on_with_the_other_tasks(alice, script):
    # given the same coding session, gone away, with a task needing its client and one not
    script(
        [
            {"match": "list the files", "tool_calls": [{"name": "run_shell", "arguments": {}}]},
            {"match": "then summarise them", "reply": "Nothing to summarise yet."},
        ]
    )
    session = create_session(
        alice.user, client_type="cli", project_id=alice.project_id, recipe="frankie-coding"
    )
    register_tools(session, [{"name": "run_shell", "parameters": {"type": "object"}}])
    chat_id = session.chat_process_id
    assert chat_id is not None
    pause_process(chat_id)
    steer_many(chat_id, ["list the files", "then summarise them"])
    suspend_session(session.pk, SuspendCause.IDLE)
    job = job_for(alice, continue_body(chat_id, stopOnClientTool=False))
    # when the cron job continues the process
    firing = fire(job.pk, NINE)
    # then the task needing the client waits, and the other one ran: completed_partial
    run = finished_run(firing.run.public_id)
    assert run.status == RunStatus.COMPLETED_PARTIAL
    assert (run.tasks_executed, run.tasks_blocked) == (1, 1)
    assert run.blocked_reasons == [
        {
            "processId": f"tp_{chat_id}",
            "taskTitle": "list the files",
            "reason": "requires client tool: run_shell",
        }
    ]
    process = ThinkProcess.objects.get(pk=chat_id)
    answers = [m.content for m in process.conversation.order_by("index") if m.role == "assistant"]
    assert answers == ["Nothing to summarise yet."]
    # and the task that waits is kept: the process blocks on it, its message pending
    assert process.status == Status.BLOCKED
    assert process.last_error == "requires client tool: run_shell"
    assert process.waiting == 1
    # and the owner is told what ran and what waits
    assert run.notifications.get().text.endswith("1 waiting: requires client tool: run_shell")
