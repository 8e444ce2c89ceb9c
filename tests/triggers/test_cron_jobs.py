"""Cron jobs over REST and in the admin: the body's checks, the PeriodicTask kept in step, and
a job that continues a PAUSED process within its maxTasks (issue 13, "Done when")."""

from __future__ import annotations

import pytest
from django_celery_beat.models import PeriodicTask, PeriodicTasks

from processes.models import ThinkProcess
from processes.states import Status
from sessions_app.models import Session
from tests.support.cron import continue_body, paused_with_pending
from tests.support.waiting import wait_until
from tests.triggers.helpers import finished_run
from triggers.models import CronJob, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def assert_continued_three_of_five(run_id: str, process_id: int) -> None:
    run = finished_run(run_id)
    assert run.client_type == "cron"
    assert run.trigger_type == "cron"
    assert run.status == RunStatus.COMPLETED_PARTIAL
    assert run.tasks_executed == 3
    assert run.tokens_used > 0
    process = ThinkProcess.objects.get(pk=process_id)
    assert process.status == Status.PAUSED
    assert process.waiting == 2
    # The run's own system session is closed; the process kept its session.
    assert run.session is not None
    assert run.session.system
    session_id = run.session.pk
    assert process.session_id != session_id
    wait_until(lambda: Session.objects.get(pk=session_id).status == "CLOSED")


def test_a_cron_job_over_rest_continues_a_paused_process_for_max_tasks(alice):
    # given a PAUSED process with five messages waiting
    chat_id = paused_with_pending(alice, 5)
    api = alice.api()
    created = api.post("/api/cron-jobs", continue_body(chat_id), format="json")
    assert created.status_code == 201, created.json()
    job = created.json()
    # when it fires
    fired = api.post(f"/api/cron-jobs/{job['id']}/run")
    # then three tasks ran and the process is PAUSED again with two waiting
    assert fired.status_code == 201, fired.json()
    firing = fired.json()["firing"]
    assert firing["outcome"] == "ran"
    assert_continued_three_of_five(firing["runId"], chat_id)
    run = api.get(f"/api/runs/{firing['runId']}").json()
    assert run["clientType"] == "cron"
    assert run["trigger"] == {"type": "cron", "cronId": job["id"]}
    assert run["status"] == "completed_partial"
    assert run["tasksExecuted"] == 3
    assert run["tokensUsed"] > 0
    assert api.get(f"/api/cron-jobs/{job['id']}").json()["lastRunId"] == firing["runId"]


def test_a_cron_job_added_in_the_admin_continues_a_paused_process(alice, operator):
    chat_id = paused_with_pending(alice, 5)
    # when an operator adds the job with the admin's add form
    response = operator.post(
        "/admin/triggers/cronjob/add/",
        {
            "owner": alice.user.pk,
            "name": "from the admin",
            "schedule": "*/10 * * * *",
            "time_zone": "UTC",
            "enabled": "on",
            "overlap": "skip",
            "action": (
                f'{{"type": "process_continue", "processId": "tp_{chat_id}", '
                '"constraints": {"maxTasks": 3}}'
            ),
            "firings-TOTAL_FORMS": "0",
            "firings-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    job = CronJob.objects.get(name="from the admin")
    # then it has its PeriodicTask, as a REST job has
    assert job.periodic_task is not None
    assert job.periodic_task.task == "triggers.fire_cron"
    assert job.periodic_task.crontab.minute == "*/10"
    assert job.project == alice.project
    fired = alice.api().post(f"/api/cron-jobs/{job.public_id}/run")
    assert_continued_three_of_five(fired.json()["firing"]["runId"], chat_id)


def test_the_admin_refuses_an_invalid_schedule_naming_the_field(alice, operator):
    chat_id = paused_with_pending(alice, 1)
    response = operator.post(
        "/admin/triggers/cronjob/add/",
        {
            "owner": alice.user.pk,
            "schedule": "61 * * * *",
            "time_zone": "UTC",
            "overlap": "skip",
            "action": f'{{"type": "process_continue", "processId": "tp_{chat_id}"}}',
            "firings-TOTAL_FORMS": "0",
            "firings-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200
    assert "is not a valid cron schedule" in response.content.decode()
    assert not CronJob.objects.exists()
    assert not PeriodicTask.objects.filter(task="triggers.fire_cron").exists()


def test_the_reply_shows_the_next_run_and_the_schedule_in_words(alice):
    chat_id = paused_with_pending(alice, 1)
    job = alice.api().post("/api/cron-jobs", continue_body(chat_id), format="json").json()
    assert job["schedule"] == "0 3 * * *"
    assert job["timezone"] == "Europe/Berlin"
    assert job["description"] == "At 03:00 AM (Europe/Berlin)"
    assert job["nextRunAt"] is not None
    # 03:00 in Berlin is 01:00 or 02:00 UTC, depending on daylight saving time
    assert job["nextRunAt"][11:16] in {"01:00", "02:00"}
    assert job["action"]["constraints"] == {
        "maxTasks": 3,
        "maxTokens": None,
        "stopOnApproval": True,
        "stopOnClientTool": True,
    }
    assert job["lastRunId"] is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schedule": "* * *"}, "schedule"),
        ({"schedule": "61 * * * *"}, "schedule"),
        ({"schedule": "* 25 * * *"}, "schedule"),
        ({"schedule": 5}, "schedule"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"enabled": "yes"}, "enabled"),
        ({"overlap": "queue"}, "overlap"),
        ({"colour": "red"}, "colour"),
        ({"action": {"type": "reboot"}}, "action.type"),
        ({"action": {"type": "process_continue"}}, "action.processId"),
        (
            {"action": {"type": "process_continue", "processId": "mine", "constraints": []}},
            "action.constraints",
        ),
        ({"action": {"type": "run_workflow"}}, "action.workflowId"),
        ({"action": {"type": "brain_linker", "strategies": [1]}}, "action.strategies.0"),
        ({"action": {"type": "brain_linker", "strategies": ["x"]}}, "action.strategies"),
        (
            {"action": {"type": "brain_linker", "constraints": {"maxLlmCalls": 0}}},
            "action.constraints.maxLlmCalls",
        ),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(alice, change, field):
    chat_id = paused_with_pending(alice, 1)
    body = {**continue_body(chat_id), **change}
    if body["action"].get("processId") == "mine":
        body["action"]["processId"] = f"tp_{chat_id}"
    response = alice.api().post("/api/cron-jobs", body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["message"].startswith(f"{field}:")
    assert response.json()["field"] == field
    assert not CronJob.objects.exists()


@pytest.mark.parametrize(
    ("constraints", "field"),
    [
        ({"maxTasks": 0}, "action.constraints.maxTasks"),
        ({"maxTasks": "3"}, "action.constraints.maxTasks"),
        ({"maxTokens": -1}, "action.constraints.maxTokens"),
        ({"stopOnApproval": 1}, "action.constraints.stopOnApproval"),
        ({"stopOnClientTool": None}, "action.constraints.stopOnClientTool"),
        ({"maxTurns": 3}, "action.constraints.maxTurns"),
    ],
)
def test_bad_constraints_are_a_400_naming_them(alice, constraints, field):
    chat_id = paused_with_pending(alice, 1)
    response = alice.api().post(
        "/api/cron-jobs", continue_body(chat_id, **constraints), format="json"
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith(f"{field}:")
    assert response.json()["field"] == field


def test_another_users_process_or_job_is_a_404(alice, bob):
    bobs = paused_with_pending(bob, 1)
    response = alice.api().post("/api/cron-jobs", continue_body(bobs), format="json")
    assert response.status_code == 404
    job = bob.api().post("/api/cron-jobs", continue_body(bobs), format="json").json()
    api = alice.api()
    assert api.get(f"/api/cron-jobs/{job['id']}").status_code == 404
    assert (
        api.patch(f"/api/cron-jobs/{job['id']}", {"enabled": False}, format="json").status_code
        == 404
    )
    assert api.delete(f"/api/cron-jobs/{job['id']}").status_code == 404
    assert api.post(f"/api/cron-jobs/{job['id']}/run").status_code == 404
    assert api.get("/api/cron-jobs").json()["count"] == 0
    assert CronJob.objects.get().enabled


def test_an_edit_goes_to_the_periodic_task_and_marks_beat_to_reload(alice):
    chat_id = paused_with_pending(alice, 1)
    api = alice.api()
    job = api.post("/api/cron-jobs", continue_body(chat_id), format="json").json()
    task = PeriodicTask.objects.get(cron_job__pk=int(job["id"].removeprefix("cron_")))
    assert task.enabled
    assert task.crontab.hour == "3"
    marked = PeriodicTasks.last_change()
    # when the schedule changes and the job is disabled
    edited = api.patch(
        f"/api/cron-jobs/{job['id']}", {"schedule": "*/5 * * * *", "enabled": False}, format="json"
    )
    # then the PeriodicTask says so, and the mark a running DatabaseScheduler watches moved
    assert edited.status_code == 200, edited.json()
    assert edited.json()["nextRunAt"] is None
    task.refresh_from_db()
    assert not task.enabled
    assert (task.crontab.minute, task.crontab.hour) == ("*/5", "*")
    assert PeriodicTasks.last_change() > marked
    # and a delete takes the PeriodicTask with it
    assert api.delete(f"/api/cron-jobs/{job['id']}").status_code == 204
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert not CronJob.objects.exists()


def test_jobs_are_listed_in_pages(alice):
    chat_id = paused_with_pending(alice, 1)
    api = alice.api()
    for _ in range(3):
        api.post("/api/cron-jobs", continue_body(chat_id), format="json")
    page = api.get("/api/cron-jobs", {"limit": 2}).json()
    assert page["count"] == 3
    assert len(page["results"]) == 2
    assert page["next"] is not None
    assert api.get("/api/cron-jobs", {"limit": "many"}).status_code == 400


def test_a_process_with_nothing_pending_is_left_as_it_was(alice):
    chat_id = paused_with_pending(alice, 0)
    api = alice.api()
    job = api.post("/api/cron-jobs", continue_body(chat_id), format="json").json()
    fired = api.post(f"/api/cron-jobs/{job['id']}/run").json()
    run = finished_run(fired["firing"]["runId"])
    assert run.status == RunStatus.COMPLETED
    assert run.tasks_executed == 0
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.PAUSED


def test_max_tokens_ends_the_continuation_at_the_turn_that_spends_it(alice):
    chat_id = paused_with_pending(alice, 5)
    api = alice.api()
    body = continue_body(chat_id, maxTasks=5, maxTokens=1)
    job = api.post("/api/cron-jobs", body, format="json").json()
    fired = api.post(f"/api/cron-jobs/{job['id']}/run").json()
    run = finished_run(fired["firing"]["runId"])
    assert run.status == RunStatus.COMPLETED_PARTIAL
    assert run.tasks_executed == 1
    process = wait_until(
        lambda: ThinkProcess.objects.filter(pk=chat_id, status=Status.PAUSED).first()
    )
    assert process.waiting == 4
    assert process.run_quota["ended"] == "maxTokens"
