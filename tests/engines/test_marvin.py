"""marvin: a task tree that plans, runs each worker in its own process, asks, and aggregates.

Driven by scripted-provider scripts written from docs/engines.md's steps table (marvin `plan`
through `plan_tasks`, marvin `aggregate`; its workers are frankie `act` and `report`).
"""

from __future__ import annotations

import pytest

from engines.registry import get_engine
from processes.actions import steer
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import SessionEvent
from tests.support.marvin import marvin, nodes, plan, result, worker
from tests.support.waiting import settled


@pytest.mark.django_db(transaction=True)
def test_marvin_plans_two_workers_runs_each_in_its_own_process_and_aggregates(alice, script):
    # given a script for marvin's plan and aggregate steps and its two workers
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Moons", "goal": "count the moons"},
                    {"kind": "WORKER", "title": "Rings", "goal": "count the rings"},
                ),
            },
            *worker("count the moons", "95 moons."),
            *worker("count the rings", "7 rings."),
            {"engine": "marvin", "step": "aggregate", "reply": "# Saturn\n95 moons, 7 rings."},
        ]
    )
    # when marvin is given a goal
    process = marvin(alice, "study Saturn")
    done = settled(process.pk, Status.CLOSED)
    # then it finished with the aggregate as its report
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    assert done.engine_state["report"] == "# Saturn\n95 moons, 7 rings."
    tree = nodes(done)
    assert [(n["kind"], n["status"]) for n in tree] == [
        ("PLAN", "DONE"),
        ("WORKER", "DONE"),
        ("WORKER", "DONE"),
        ("AGGREGATE", "DONE"),
    ]
    # each worker ran as its own child process, whose structured result is the node's result
    workers = [n for n in tree if n["kind"] == "WORKER"]
    children = ThinkProcess.objects.filter(parent=done).order_by("pk")
    assert [n["processId"] for n in workers] == [c.public_id for c in children]
    assert [c.recipe_name for c in children] == ["marvin-worker", "marvin-worker"]
    assert all(c.close_reason == CloseReason.DONE for c in children)
    assert workers[0]["result"] == result("95 moons.")
    assert workers[1]["result"] == result("7 rings.")
    # the client saw the tree grow (one tree per turn: its start, the plan, and a report, or
    # both reports when they arrived together and marvin took them in one turn), and the
    # report as marvin's answer
    events = SessionEvent.objects.filter(session_id=done.session_id)
    trees = [e.data["tree"] for e in events.filter(event="task-tree").order_by("seq")]
    assert len(trees) >= 3
    assert len(trees[0]["nodes"]) == 1
    assert len(trees[-1]["nodes"]) == 4
    assert events.filter(event="chat-message", data__text=done.engine_state["report"]).exists()
    # and the process detail carries the tree
    detail = alice.api().get(f"/api/processes/{done.public_id}").json()
    assert [n["status"] for n in detail["taskTree"]["nodes"]] == ["DONE"] * 4
    # and its parent would read the report
    summary = get_engine("marvin").summarize_for_parent(done, "DONE")
    assert summary.human_summary == "# Saturn\n95 moons, 7 rings."


@pytest.mark.django_db(transaction=True)
def test_an_invalid_plan_is_sent_back_once_with_the_validation_error(alice, script):
    # given a plan step that first answers with an unknown kind, and, once told why, a plan
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "match": r"control: retry\] invalid plan_tasks arguments: tasks/0/kind",
                "tool_calls": plan({"kind": "AGGREGATE", "title": "Report"}),
            },
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan({"kind": "DREAM", "title": "x"}),
            },
            {"engine": "marvin", "step": "aggregate", "reply": "nothing to report"},
        ]
    )
    # when marvin plans
    done = settled(marvin(alice, "plan badly first").pk, Status.CLOSED)
    # then the retry, which carried the error, gave the plan that ran
    assert (done.close_reason, done.engine_state["report"]) == (
        CloseReason.DONE,
        "nothing to report",
    )


@pytest.mark.django_db(transaction=True)
def test_a_plan_invalid_twice_fails_marvin_with_the_steps_error(alice, script):
    script([{"engine": "marvin", "step": "plan", "tool_calls": plan({"kind": "DREAM"})}])
    done = settled(marvin(alice, "plan badly").pk, Status.CLOSED)
    assert done.close_reason == CloseReason.FAILED
    assert done.last_error.startswith("step plan: invalid plan_tasks arguments: tasks/0")
    [plan_node] = nodes(done)
    assert plan_node["status"] == "FAILED"


@pytest.mark.django_db(transaction=True)
def test_a_question_blocks_marvin_and_the_answer_continues_it_without_rerunning_a_worker(
    alice, script
):
    # given a workflow's tasks (no plan call): a worker, a question, the report
    script(
        [
            *worker("measure the rings", "7 rings."),
            {"engine": "marvin", "step": "aggregate", "reply": "Report: 7 rings, in blue."},
        ]
    )
    tasks = [
        {"kind": "WORKER", "title": "Rings", "goal": "measure the rings"},
        {"kind": "USER_INPUT", "title": "Colour", "goal": "Which colour for the chart?"},
        {"kind": "AGGREGATE", "title": "Report"},
    ]
    process = marvin(alice, "chart Saturn's rings", tasks=tasks)
    # when the worker has reported, marvin blocks on the question, which its parent would read
    blocked = settled(process.pk, Status.BLOCKED)
    assert [n["status"] for n in nodes(blocked)] == ["DONE", "DONE", "BLOCKED", "PENDING"]
    summary = get_engine("marvin").summarize_for_parent(blocked, "BLOCKED")
    assert "Which colour for the chart?" in summary.human_summary
    assert summary.payload["nodeId"] == nodes(blocked)[2]["id"]
    # and the answer comes back as a steer
    steer.steer_process(process.pk, "blue")
    done = settled(process.pk, Status.CLOSED)
    # then it continues from the question: the worker did not run again
    assert done.close_reason == CloseReason.DONE
    assert ThinkProcess.objects.filter(parent=done).count() == 1
    assert nodes(done)[2]["result"] == "blue"
    assert done.engine_state["report"] == "Report: 7 rings, in blue."


@pytest.mark.django_db(transaction=True)
def test_given_tasks_that_do_not_fit_the_schema_fail_marvin_naming_the_field(alice, script):
    done = marvin(alice, "bad workflow", tasks=[{"kind": "WORKER"}])
    assert (done.status, done.close_reason) == (Status.CLOSED, CloseReason.FAILED)
    assert done.last_error == "params.tasks: [0].title must be a non-empty string"
