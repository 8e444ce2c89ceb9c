"""A run log's `notificationsSent` lists what the run sent: each message's type, the user it
went to and the message itself, for system runs and for a person's runs alike (an approval
asked in a run's first turn, before its run log is stored, too)."""

from __future__ import annotations

import pytest

from processes.actions.steer import send_chat
from processes.models import ThinkProcess
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from tests.triggers.helpers import REVIEW, create_workflow, finished_run
from triggers.models import Notification, RunLog, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def listed(tenancy, run_id: str) -> list[dict]:
    response = tenancy.api().get(f"/api/runs/{run_id}")
    assert response.status_code == 200, response.json()
    return response.json()["notificationsSent"]


def test_a_blocked_workflow_run_lists_the_notice_it_sent(alice):
    # given a workflow whose first task asks its person a question
    body = {**REVIEW, "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which?"}]}
    workflow_id = create_workflow(alice, body)
    # when alice runs it and it blocks
    started = alice.api().post(
        f"/api/workflows/{workflow_id}/run", {"input": {"topic": "Saturn"}}, format="json"
    )
    run = finished_run(started.json()["runId"])
    assert run.status == RunStatus.BLOCKED
    # then its run log lists the notice it sent alice, with the message
    notice = Notification.objects.get(run=run)
    assert listed(alice, run.public_id) == [
        {
            "id": notice.public_id,
            "type": "notification",
            "user": alice.user.username,
            "message": notice.text,
        }
    ]
    assert notice.text.startswith(f"Workflow 'review' ({run.public_id}) is blocked: ")
    # and the runs list says the same
    rows = alice.api().get("/api/runs").json()["results"]
    assert [row["notificationsSent"] for row in rows if row["id"] == run.public_id] == [
        [
            {
                "id": notice.public_id,
                "type": "notification",
                "user": alice.user.username,
                "message": notice.text,
            }
        ]
    ]


def test_an_approval_asked_in_a_persons_first_turn_is_listed_in_that_run(alice, script):
    # given alice's chat, whose answer asks her approval (before its run log is stored)
    script(
        [
            {
                "match": "deploy it",
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
    session = open_session(alice)
    chat_id = session.chat_process_id
    # when she asks
    send_chat(session.pk, "deploy it")
    run = wait_until(
        lambda: RunLog.objects.filter(process_id=chat_id).exclude(status="running").first()
    )
    # then the run counts the notification and lists it, addressed to her
    notice = Notification.objects.get(user=alice.user, process_public_id=f"tp_{chat_id}")
    assert notice.run_id == run.pk
    assert run.notifications_sent == 1
    sent = listed(alice, run.public_id)
    assert [(row["type"], row["user"]) for row in sent] == [("notification", alice.user.username)]
    assert sent[0]["message"].startswith(f"tp_{chat_id} asks for your approval: Deploy?")
    assert ThinkProcess.objects.get(pk=chat_id).session_id == session.pk


def test_a_run_that_sent_nothing_lists_nothing(alice, script):
    script([{"match": "hello", "reply": "Hi."}])
    session = open_session(alice)
    send_chat(session.pk, "hello")
    run = wait_until(
        lambda: (
            RunLog.objects.filter(process_id=session.chat_process_id)
            .exclude(status="running")
            .first()
        )
    )
    assert listed(alice, run.public_id) == []
