"""unblock_tasks: a process that called await_external waits BLOCKED on its key; a `jira`
webhook steers the process blocked by `jira:ABC-1` and no other, and that process's next LLM
call reads `[unblocked by jira:ABC-1]` and the event."""

from __future__ import annotations

import json

import pytest

from processes.actions.create import create_process
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import Session
from tests.support.tenancy import open_session
from tests.support.waiting import closed_process, wait_until
from tests.triggers.webhook_helpers import create_webhook, deliver, payload
from triggers.models import RunLog, RunStatus, TriggerEvent

SCRIPT = [
    {
        "engine": "frankie",
        "match": "wait for ABC-1",
        "tool_calls": [{"name": "await_external", "arguments": {"key": "jira:ABC-1"}}],
    },
    {
        "engine": "frankie",
        "match": "wait for ABC-2",
        "tool_calls": [{"name": "await_external", "arguments": {"key": "jira:ABC-2"}}],
    },
    {"engine": "frankie", "match": r"^\[unblocked by jira:ABC-1\]", "reply": "ABC-1 is done."},
]


def blocked(process_id: int) -> ThinkProcess:
    found = wait_until(
        lambda: ThinkProcess.objects.filter(pk=process_id, status=Status.BLOCKED).first()
    )
    assert found is not None
    return found


@pytest.mark.django_db(transaction=True)
def test_a_jira_webhook_unblocks_the_process_blocked_by_its_key_and_no_other(alice, bob, script):
    # given two processes of alice's project waiting for jira:ABC-1 and jira:ABC-2
    script(SCRIPT)
    session = open_session(alice)
    first = create_process(session, goal="wait for ABC-1", recipe="frankie-external")
    second = create_process(session, goal="wait for ABC-2", recipe="frankie-external")
    for process, key in ((first, "jira:ABC-1"), (second, "jira:ABC-2")):
        waiting = blocked(process.pk)
        assert waiting.blocked_by_external == key
        assert waiting.last_error == f"waiting for external: {key}"
    # and bob's project has a process waiting for the same key
    bobs = create_process(open_session(bob), goal="wait for ABC-1", recipe="frankie-external")
    assert blocked(bobs.pk).blocked_by_external == "jira:ABC-1"
    # and alice's jira webhook unblocks jira:${event.issue.key}
    hook = create_webhook(
        alice,
        {
            "name": "jira",
            "mode": "secret",
            "filter": {"webhookEvent": "jira:issue_updated"},
            "action": {
                "type": "unblock_tasks",
                "match": {"blockedByExternal": "jira:${event.issue.key}"},
            },
        },
    )
    # when jira says ABC-1 was updated
    event = {"webhookEvent": "jira:issue_updated", "issue": {"key": "ABC-1", "status": "Done"}}
    response = deliver(hook["id"], payload(**event), **{"X-Webhook-Secret": hook["secret"]})
    # then the delivery is accepted as a run of a webhook session that unblocked one process
    assert response.status_code == 200, response.json()
    run = RunLog.objects.get(pk=int(response.json()["runId"].removeprefix("run_")))
    assert (run.trigger_type, run.client_type, run.status) == (
        "webhook",
        "webhook",
        RunStatus.COMPLETED,
    )
    assert run.tasks_executed == 1
    assert TriggerEvent.objects.get(run=run).reason == (
        f"unblocked {first.public_id} waiting for 'jira:ABC-1'"
    )
    # and the first process's next LLM call read the tag and the event, then it finished
    done = closed_process(first.pk)
    assert done.close_reason == CloseReason.DONE
    assert done.blocked_by_external == ""
    assert done.engine_state["result"] == "ABC-1 is done."
    told = [m.content for m in done.conversation.order_by("index") if m.role == "user"]
    assert told[-1] == f"[unblocked by jira:ABC-1]\n{json.dumps(event)}"
    # and the other processes still wait, their keys kept
    for other, key in ((second, "jira:ABC-2"), (bobs, "jira:ABC-1")):
        other.refresh_from_db()
        assert (other.status, other.blocked_by_external) == (Status.BLOCKED, key)
    # and a second delivery of the same key finds no one left to unblock
    again = deliver(hook["id"], payload(**event), **{"X-Webhook-Secret": hook["secret"]})
    assert again.status_code == 200
    assert RunLog.objects.get(pk=int(again.json()["runId"][4:])).tasks_executed == 0


@pytest.mark.django_db(transaction=True)
def test_each_unblock_delivery_opens_and_closes_a_system_session_of_its_own(alice):
    # given an unblock_tasks webhook
    hook = create_webhook(
        alice,
        {
            "name": "ci",
            "mode": "secret",
            "action": {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.b}"}},
        },
    )
    # when two deliveries come
    run_ids = []
    for build in (1, 2):
        answer = deliver(hook["id"], payload(b=build), **{"X-Webhook-Secret": hook["secret"]})
        assert answer.status_code == 200, answer.json()
        run_ids.append(int(answer.json()["runId"].removeprefix("run_")))
    # then each ran in a system session of its own, opened for it and closed after it
    runs = [RunLog.objects.select_related("session").get(pk=pk) for pk in run_ids]
    sessions = [run.session for run in runs]
    assert all(session is not None for session in sessions)
    assert sessions[0].pk != sessions[1].pk
    for run, session in zip(runs, sessions, strict=True):
        assert run.owns_session
        assert (session.client_type, session.system, session.is_human) == ("webhook", True, False)
        assert session.status == "CLOSED"
        assert session.owner.username == "_system"
    # and no webhook session is left open in the project
    assert not Session.objects.filter(client_type="webhook", status="OPEN").exists()
