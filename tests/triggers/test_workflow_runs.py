"""A workflow run over REST: its own system session, a marvin process whose task tree is the
workflow's tasks with the inputs filled in, and a run log that goes running → completed (or
blocked, with its reason and a notification on the owner's open socket)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from inbox.models import InboxItem, InboxKind
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import ClientType, Session, SessionStatus
from tests.support.marvin import worker
from tests.support.waiting import wait_until
from tests.support.ws import bearer, connect, open_session
from tests.triggers.helpers import REVIEW, create_workflow, finished_run
from triggers.models import Notification, RunStatus, RunTransition

SCRIPT = [
    *worker("find sources on Saturn", "Three good sources."),
    {"engine": "marvin", "step": "aggregate", "reply": "# Saturn\nA review."},
]


@pytest.mark.django_db(transaction=True)
def test_a_workflow_run_is_a_marvin_tree_in_a_system_session_and_its_run_log_completes(
    alice, script
):
    # given a workflow and a script for its worker and its aggregate step
    script(SCRIPT)
    workflow_id = create_workflow(alice)
    # when alice runs it with its input
    response = alice.api().post(
        f"/api/workflows/{workflow_id}/run", {"input": {"topic": "Saturn"}}, format="json"
    )
    # then she gets the process and the run, which is running at first
    assert response.status_code == 201, response.json()
    started = response.json()
    assert started["process"]["thinkEngine"] == "marvin"
    process = ThinkProcess.objects.get(pk=int(started["process"]["id"].removeprefix("tp_")))
    # in a system session of its own, owned by _system, without tools or a chat: the run's
    # process is the only one in it
    session = process.session
    assert session.chat_process_id is None
    assert list(ThinkProcess.objects.filter(session=session, parent=None)) == [process]
    assert (session.client_type, session.is_human, session.system) == (
        ClientType.WORKFLOW,
        False,
        True,
    )
    assert session.owner.username == "_system"
    assert session.client_tools == []
    # whose task tree is the workflow's tasks, filled in, with no plan call
    run = finished_run(started["runId"])
    process.refresh_from_db()
    nodes = process.engine_state["taskTree"]["nodes"]
    assert [(n["kind"], n["title"], n["goal"], n["status"]) for n in nodes[1:]] == [
        ("WORKER", "Sources", "find sources on Saturn", "DONE"),
        ("AGGREGATE", "Report", "write the review", "DONE"),
    ]
    assert process.goal == "Review Saturn"
    assert (process.status, process.close_reason) == (Status.CLOSED, CloseReason.DONE)
    # and the run log completed with what the tree did and spent
    tree = ThinkProcess.objects.filter(pk=process.pk) | ThinkProcess.objects.filter(
        root_id=process.pk
    )
    spent = sum(p.prompt_tokens + p.completion_tokens for p in tree)
    assert run.status == RunStatus.COMPLETED
    # (LLM calls: the worker's act and report, marvin's aggregate)
    assert (run.tasks_executed, run.tasks_blocked, run.llm_calls) == (2, 0, 3)
    assert run.tokens_used == spent > 0
    assert run.finished_at is not None
    assert [(t.from_status, t.to_status) for t in RunTransition.objects.filter(run=run)] == [
        ("", "running"),
        ("running", "completed"),
    ]
    # and the session the run opened is closed
    assert wait_until(lambda: Session.objects.get(pk=session.pk).status == SessionStatus.CLOSED)
    detail = alice.api().get(f"/api/runs/{run.public_id}").json()
    assert detail["trigger"] == {"type": "workflow", "workflowId": workflow_id}
    assert detail["scope"] == {"projectId": alice.project_id, "processId": process.public_id}
    assert (detail["clientType"], detail["sessionId"]) == ("workflow", session.public_id)


@pytest.mark.django_db(transaction=True)
def test_a_run_without_its_input_is_a_400_naming_it_and_opens_nothing(alice):
    # given a workflow that needs a topic
    workflow_id = create_workflow(alice)
    sessions_before = Session.objects.count()
    # when it is run without one
    response = alice.api().post(f"/api/workflows/{workflow_id}/run", {"input": {}}, format="json")
    # then the 400 names the input, and no session, process or run was made
    assert response.status_code == 400
    assert response.json()["message"] == "input.topic: missing: the workflow uses it"
    assert Session.objects.count() == sessions_before
    assert alice.api().get("/api/runs").json()["count"] == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_run_that_blocks_on_user_input_ends_blocked_and_notifies_the_owner(alice):
    # given alice's open socket and a workflow whose first task asks her
    client = await connect(bearer(alice))
    await open_session(client, alice)
    body = {
        **REVIEW,
        "tasks": [
            {"kind": "USER_INPUT", "title": "Scope", "goal": "Which moons of ${input.topic}?"}
        ],
    }
    workflow_id = await database_sync_to_async(create_workflow)(alice, body)
    # when she runs it over REST
    response = await database_sync_to_async(alice.api().post)(
        f"/api/workflows/{workflow_id}/run", {"input": {"topic": "Saturn"}}, format="json"
    )
    run_id = response.json()["runId"]
    # then her socket hears the notification, after the run's start and its blocked finish
    notice = await client.event("notification", runId=run_id)
    heard = [e["data"]["run"] for e in client.events if e["event"] == "run"]
    assert [(r["id"], r["status"]) for r in heard] == [(run_id, "running"), (run_id, "blocked")]
    run = await database_sync_to_async(finished_run)(run_id)
    assert run.status == RunStatus.BLOCKED
    assert run.blocked_reasons == [
        {
            "taskId": "n2",
            "taskTitle": "Scope",
            "processId": run.process_public_id,
            "reason": "waiting for input: Which moons of Saturn?",
        }
    ]
    assert (run.tasks_blocked, run.notifications_sent) == (1, 1)
    stored = await database_sync_to_async(Notification.objects.get)(run=run)
    asked = await database_sync_to_async(InboxItem.objects.get)(user=alice.user)
    assert notice["data"] == {
        "text": f"Workflow 'review' ({run_id}) is blocked: waiting for input: Which moons of "
        f"Saturn? (answer {asked.public_id} in the inbox)",
        "level": "warning",
        "id": stored.public_id,
        "runId": run_id,
        "processId": run.process_public_id,
    }
    # and the blocked process keeps its session, so it can still be answered
    session = await database_sync_to_async(lambda: Session.objects.get(pk=run.session_id))()
    assert session.status == SessionStatus.OPEN
    await client.ws.disconnect()


@pytest.mark.django_db(transaction=True)
def test_the_owner_answers_a_blocked_runs_question_and_its_process_goes_on_to_the_end(
    alice, script
):
    # given a run blocked on its question, and a script for the report after it
    script([{"engine": "marvin", "step": "aggregate", "reply": "Rings it is."}])
    body = {
        **REVIEW,
        "tasks": [
            {"kind": "USER_INPUT", "title": "Scope", "goal": "Which part of ${input.topic}?"}
        ],
    }
    workflow_id = create_workflow(alice, body)
    started = alice.api().post(
        f"/api/workflows/{workflow_id}/run", {"input": {"topic": "Saturn"}}, format="json"
    )
    run = finished_run(started.json()["runId"])
    assert run.status == RunStatus.BLOCKED
    # then the question is in alice's inbox (not _system's), from the run's process
    item = InboxItem.objects.get(user=alice.user)
    assert (item.kind, item.title, item.body) == (
        InboxKind.QUESTION,
        "Scope",
        "Which part of Saturn?",
    )
    assert item.origin_public_id == run.process_public_id
    # when she answers it
    answered = alice.api().post(
        f"/api/inbox/{item.public_id}/answer", {"answer": {"text": "the rings"}}, format="json"
    )
    assert answered.json()["delivered"] is True
    # then the process finishes with her answer as the node's result, and the session the run
    # opened is closed; the run log shows its real end: blocked, running again, completed
    process = wait_until(
        lambda: ThinkProcess.objects.filter(pk=run.process_id, status=Status.CLOSED).first()
    )
    assert process.close_reason == CloseReason.DONE
    assert "the rings" in process.engine_state["taskTree"]["nodes"][1]["result"]
    assert wait_until(lambda: Session.objects.get(pk=run.session_id).status == SessionStatus.CLOSED)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert (run.tasks_executed, run.tasks_blocked, run.blocked_reasons) == (2, 0, [])
    moves = list(RunTransition.objects.filter(run=run))
    assert [(t.from_status, t.to_status) for t in moves] == [
        ("", "running"),
        ("running", "blocked"),
        ("blocked", "running"),
        ("running", "completed"),
    ]
    # the run went on when its process left BLOCKED, not when it finished
    left = process.transitions.filter(from_status=Status.BLOCKED).latest("at")
    assert moves[2].at == left.at
    assert moves[1].at <= moves[2].at <= moves[3].at
