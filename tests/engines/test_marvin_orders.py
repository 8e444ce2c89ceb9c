"""A person's orders to a marvin tree: cancel a node (REST), and pause the whole tree.

Driven by scripted-provider scripts written from docs/engines.md (marvin `plan` through
`plan_tasks`, `aggregate`; its workers are frankie `act` and `report`). The trees run one
worker at a time (`maxParallel: 1`), so that an order finds the next nodes still pending.
"""

from __future__ import annotations

import pytest

from processes.actions import lifecycle
from processes.models import ConversationMessage, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status
from tests.support.marvin import marvin, nodes, plan, statuses, worker
from tests.support.waiting import settled, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

THREE_WORKERS = [
    {
        "engine": "marvin",
        "step": "plan",
        "tool_calls": plan(
            {"kind": "WORKER", "title": "Slow", "goal": "the slow task"},
            {"kind": "WORKER", "title": "Unwanted", "goal": "the unwanted task"},
            {"kind": "WORKER", "title": "Last", "goal": "the last task"},
        ),
    },
    # Slow, so that orders arrive while it runs.
    *worker("the slow task", "slow done", delay=1.5),
    *worker("the unwanted task", "should not run"),
    *worker("the last task", "last done"),
    {"engine": "marvin", "step": "aggregate", "reply": "the report"},
]


def test_a_cancelled_pending_node_is_skipped_and_its_worker_never_runs(alice, script):
    # given a tree whose first worker is running
    script(THREE_WORKERS)
    process = marvin(alice, "three tasks", maxParallel=1)
    wait_until(lambda: statuses(process.pk)[1:3] == ["RUNNING", "PENDING"], timeout=20)
    # when the person cancels the second worker's node
    response = alice.api().post(f"/api/processes/{process.public_id}/task-tree/n3/cancel")
    # then the order is taken, and the tree finishes without that worker
    assert response.status_code == 202, response.json()
    assert response.json()["nodeId"] == "n3"
    done = settled(process.pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    tree = nodes(done)
    assert [n["status"] for n in tree] == ["DONE", "DONE", "SKIPPED", "DONE", "DONE"]
    assert tree[2]["error"] == "cancelled by the person"
    assert "processId" not in tree[2]
    goals = list(ThinkProcess.objects.filter(parent=done).values_list("goal", flat=True))
    assert sorted(goals) == ["the last task", "the slow task"]


def test_a_cancelled_running_worker_is_stopped_and_the_tree_goes_on(alice, script):
    # given a tree whose slow first worker is running
    script(THREE_WORKERS)
    process = marvin(alice, "three tasks", maxParallel=1)
    wait_until(lambda: statuses(process.pk)[1:2] == ["RUNNING"], timeout=20)
    worker_id = nodes(ThinkProcess.objects.get(pk=process.pk))[1]["processId"]
    # when the person cancels it
    response = alice.api().post(f"/api/processes/{process.public_id}/task-tree/n2/cancel")
    # then its worker is stopped, its node skipped, and the next nodes run
    assert response.status_code == 202
    done = settled(process.pk, Status.CLOSED)
    assert [n["status"] for n in nodes(done)] == ["DONE", "SKIPPED", "DONE", "DONE", "DONE"]
    worker = ThinkProcess.objects.get(pk=int(worker_id.removeprefix("tp_")))
    assert worker.close_reason == CloseReason.STOPPED


def test_cancelling_a_finished_or_unknown_node_is_refused_and_changes_nothing(alice, script):
    # given a tree that has finished
    script(THREE_WORKERS)
    process = marvin(alice, "three tasks", maxParallel=1)
    done = settled(process.pk, Status.CLOSED)
    open_one = marvin(alice, "three tasks", maxParallel=1)
    wait_until(lambda: statuses(open_one.pk)[1:2] == ["RUNNING"], timeout=20)
    queued = PendingMessage.objects.filter(process_id=open_one.pk).count()
    api = alice.api()
    # when
    closed = api.post(f"/api/processes/{done.public_id}/task-tree/n2/cancel")
    finished = api.post(f"/api/processes/{open_one.public_id}/task-tree/n1/cancel")
    unknown = api.post(f"/api/processes/{open_one.public_id}/task-tree/n99/cancel")
    # then each gets its precise error, and no order was queued
    assert (closed.status_code, closed.json()["error"]) == (409, "conflict")
    assert finished.status_code == 409
    assert "node n1 is DONE" in finished.json()["message"]
    assert unknown.status_code == 404
    assert "node n99 not found" in unknown.json()["message"]
    assert PendingMessage.objects.filter(process_id=open_one.pk).count() == queued


def test_another_tenants_process_is_not_found(alice, bob, script):
    script(THREE_WORKERS)
    process = marvin(alice, "three tasks", maxParallel=1)
    # when
    response = bob.api().post(f"/api/processes/{process.public_id}/task-tree/n2/cancel")
    # then
    assert response.status_code == 404


def test_pausing_marvin_pauses_its_running_worker_and_resuming_finishes_the_tree(alice, script):
    # given a tree whose slow first worker is in its turn
    script(THREE_WORKERS)
    process = marvin(alice, "three tasks", maxParallel=1)
    wait_until(lambda: statuses(process.pk)[1:2] == ["RUNNING"], timeout=20)
    worker_pk = int(nodes(ThinkProcess.objects.get(pk=process.pk))[1]["processId"][3:])
    wait_until(lambda: ThinkProcess.objects.get(pk=worker_pk).status == Status.RUNNING)
    # when the person pauses marvin
    lifecycle.pause_process(process.pk)
    # then its worker is paused too, its task still pending, and no further node starts
    worker = ThinkProcess.objects.get(pk=worker_pk)
    assert (worker.status, worker.waiting) == (Status.PAUSED, 1)
    assert statuses(process.pk)[2:] == ["PENDING", "PENDING", "PENDING"]
    assert ThinkProcess.objects.filter(parent_id=process.pk).count() == 1
    # when it is resumed, the worker finishes its task and the tree completes
    lifecycle.resume_process(process.pk)
    done = settled(process.pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    assert [n["status"] for n in nodes(done)] == ["DONE"] * 5
    answers = ConversationMessage.objects.filter(process_id=worker_pk, role="assistant")
    assert [a.content for a in answers] == ["slow done"]


NESTED = [
    {
        "engine": "marvin",
        "step": "plan",
        "match": "Plan: the outer goal",
        "tool_calls": plan(
            {"kind": "WORKER", "title": "Inner", "goal": "the inner goal", "recipe": "deep-think"}
        ),
    },
    {
        "engine": "marvin",
        "step": "plan",
        "match": "Plan: the inner goal",
        "tool_calls": plan({"kind": "WORKER", "title": "Slow", "goal": "the slow task"}),
    },
    *worker("the slow task", "slow done", delay=1.5),
    {
        "engine": "marvin",
        "step": "aggregate",
        "match": "report for: the inner goal",
        "reply": "inner report",
    },
    {
        "engine": "marvin",
        "step": "aggregate",
        "match": "report for: the outer goal",
        "reply": "outer report",
    },
]


def test_pausing_marvin_pauses_the_tree_below_it_and_resuming_resumes_it(alice, script):
    # given marvin whose worker is another marvin, waiting for its own slow worker
    script(NESTED)
    outer = marvin(alice, "the outer goal")
    wait_until(lambda: statuses(outer.pk)[1:2] == ["RUNNING"], timeout=20)
    inner_pk = int(nodes(ThinkProcess.objects.get(pk=outer.pk))[1]["processId"][3:])
    wait_until(lambda: statuses(inner_pk)[1:2] == ["RUNNING"], timeout=20)
    # when the person pauses the outer marvin
    lifecycle.pause_process(outer.pk)
    # then the inner one is paused with it
    assert ThinkProcess.objects.get(pk=inner_pk).status == Status.PAUSED
    # when the outer one is resumed, so is the inner one, and both trees complete
    lifecycle.resume_process(outer.pk)
    done = settled(outer.pk, Status.CLOSED)
    assert (done.close_reason, done.engine_state["report"]) == (CloseReason.DONE, "outer report")
    inner = ThinkProcess.objects.get(pk=inner_pk)
    assert (inner.close_reason, inner.engine_state["report"]) == (CloseReason.DONE, "inner report")
