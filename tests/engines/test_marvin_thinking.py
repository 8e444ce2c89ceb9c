"""marvin thinks: its plans read what the finished nodes found, a failed worker wakes a bounded
re-plan, workers return structured results, and independent workers run at the same time.

Driven by scripted-provider scripts written from docs/engines.md's steps table; the prompts
marvin sends are read where the provider receives them (a recording wrapper around it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from engines.builtin.marvin.prompts import aggregate_ask, digest
from engines.builtin.marvin.state import MarvinState
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from tests.support.marvin import marvin, nodes, plan, result, running_intervals, worker
from tests.support.waiting import closed_process, settled
from vancetope.llm.base import CallInfo, LlmMessage
from vancetope.llm.scripted import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass(frozen=True)
class Call:
    engine: str
    step: str
    messages: list[LlmMessage]

    @property
    def last_user(self) -> str:
        return next(m.content for m in reversed(self.messages) if m.role == "user")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Every LLM call the scripted provider receives, in order."""
    seen: list[Call] = []
    original = ScriptedProvider.stream

    def recording(
        self: ScriptedProvider,
        messages: list[LlmMessage],
        tools: Any = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Any:
        asked = info or CallInfo()
        seen.append(Call(asked.engine, asked.step, list(messages)))
        return original(self, messages, tools, info, force_tool=force_tool)

    monkeypatch.setattr(ScriptedProvider, "stream", recording)
    return seen


def of_step(calls: list[Call], engine: str, step: str) -> list[Call]:
    return [call for call in calls if (call.engine, call.step) == (engine, step)]


def replan(**arguments: Any) -> list[dict[str, Any]]:
    return [{"name": "replan_tasks", "arguments": arguments}]


# A worker whose structured result never fits the schema: sent back once, then it fails.
INVALID_REPORT = {
    "engine": "frankie",
    "step": "report",
    "match": r"the doomed task|\[control: retry\] invalid report_result",
    "tool_calls": [{"name": "report_result", "arguments": {"summary": "no findings field"}}],
}
DOOMED_ACT = {"engine": "frankie", "step": "act", "match": "the doomed task", "reply": "hmm"}


def test_a_plan_after_two_workers_sees_their_results_in_its_prompt(alice, script, calls):
    # given a tree of two workers and then a PLAN node, then the report
    tasks = [
        {"kind": "WORKER", "title": "Moons", "goal": "count the moons"},
        {"kind": "WORKER", "title": "Rings", "goal": "count the rings"},
        {"kind": "PLAN", "title": "Next", "goal": "decide what to measure next"},
        {"kind": "AGGREGATE", "title": "Report"},
    ]
    script(
        [
            *worker("count the moons", "95 moons."),
            *worker("count the rings", "7 rings."),
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan({"kind": "WORKER", "title": "Tilt", "goal": "measure tilt"}),
            },
            *worker("measure tilt", "26.7 degrees."),
            {"engine": "marvin", "step": "aggregate", "reply": "the report"},
        ]
    )
    # when marvin runs it
    done = settled(marvin(alice, "study Saturn", tasks=tasks).pk, Status.CLOSED)
    # then the PLAN step read both workers' results, with their titles and statuses
    assert done.close_reason == CloseReason.DONE, done.last_error
    [plan_call] = of_step(calls, "marvin", "plan")
    prompt = plan_call.last_user
    assert prompt.startswith("Plan: decide what to measure next")
    assert "- n2 WORKER 'Moons' DONE: 95 moons." in prompt
    assert "- n3 WORKER 'Rings' DONE: 7 rings." in prompt
    # and the report read the stored structured results, not the workers' chat
    [aggregate] = of_step(calls, "marvin", "aggregate")
    assert '"summary": "26.7 degrees."' in aggregate.last_user
    assert [n["status"] for n in nodes(done)] == ["DONE"] * 6


def test_a_failing_worker_triggers_a_replan_that_adds_a_node_and_the_tree_completes(
    alice, script, calls
):
    # given a plan of two workers, one of which fails, and a re-plan that adds another
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Doomed", "goal": "the doomed task"},
                    {"kind": "WORKER", "title": "Good", "goal": "the good task"},
                ),
            },
            INVALID_REPORT,
            DOOMED_ACT,
            *worker("the good task", "good result"),
            {
                "engine": "marvin",
                "step": "replan",
                "tool_calls": replan(
                    add=[{"kind": "WORKER", "title": "Instead", "goal": "the other way"}],
                    reason="try the other way",
                ),
            },
            *worker("the other way", "found it the other way"),
            {"engine": "marvin", "step": "aggregate", "reply": "the report"},
        ]
    )
    # when marvin runs it
    done = settled(marvin(alice, "two ways").pk, Status.CLOSED)
    # then the failure woke one re-plan, whose node ran, and the tree completed
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    tree = {n["id"]: n for n in nodes(done)}
    assert tree["n2"]["status"] == "FAILED"
    assert "report_result" in tree["n2"]["error"]
    [replan_node] = [n for n in tree.values() if n.get("replanOf")]
    assert (replan_node["kind"], replan_node["replanOf"], replan_node["status"]) == (
        "PLAN",
        ["n2"],
        "DONE",
    )
    [added] = replan_node["result"]["added"]
    assert tree[added]["parentId"] == replan_node["id"]
    assert (tree[added]["status"], tree[added]["result"]) == (
        "DONE",
        result("found it the other way"),
    )
    assert done.engine_state["replans"] == 1
    # the re-plan read the failure and what was done
    [replan_call] = of_step(calls, "marvin", "replan")
    assert "- n2 WORKER 'Doomed': step report: invalid report_result" in replan_call.last_user
    # and the report did not run before the added node had finished
    [aggregate] = of_step(calls, "marvin", "aggregate")
    assert "found it the other way" in aggregate.last_user


def test_with_the_replans_used_up_marvin_closes_failed_naming_the_node_and_no_child_stays_open(
    alice, script, settings
):
    # given a worker whose provider always fails (it waits BLOCKED after its lane's retries),
    # a slow worker beside it, and one re-plan allowed, which retries the failed node
    settings.VANCETOPE_TURN_RETRY_SECONDS = 0.01
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Doomed", "goal": "the doomed task"},
                    {"kind": "WORKER", "title": "Slow", "goal": "the slow task"},
                ),
            },
            {"engine": "frankie", "match": "the doomed task", "error": "provider down"},
            # Slow enough to be running when marvin gives up; a stop waits for its call.
            *worker("the slow task", "slow result", delay=4),
            {"engine": "marvin", "step": "replan", "tool_calls": replan(retry=["n2"])},
        ]
    )
    # when marvin runs it
    # (the reports of the workers it stopped reach it closed: they stay unread)
    done = closed_process(marvin(alice, "too hard", maxReplans=1).pk, timeout=40)
    # then it closed FAILED naming the node, after its one re-plan
    assert done.close_reason == CloseReason.FAILED
    assert "tasks failed after 1 re-plans: n2 (Doomed)" in done.last_error
    assert "provider down" in done.last_error
    tree = {n["id"]: n for n in nodes(done)}
    assert (tree["n2"]["status"], tree["n2"]["attempts"]) == ("FAILED", 2)
    assert tree["n3"]["status"] == "SKIPPED"
    # and every worker it started is closed: the slow one stopped, the doomed ones too
    children = ThinkProcess.objects.filter(parent_id=done.pk)
    assert children.count() == 3
    assert all(child.status == Status.CLOSED for child in children)
    slow = ThinkProcess.objects.get(parent_id=done.pk, goal="the slow task")
    assert slow.close_reason == CloseReason.STOPPED


def test_a_workers_schema_invalid_result_is_sent_back_once_then_fails_the_node(
    alice, script, calls
):
    # given a worker whose report never fits the schema; no re-plan, partial reports allowed
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Doomed", "goal": "the doomed task"},
                    {"kind": "WORKER", "title": "Good", "goal": "the good task"},
                ),
            },
            INVALID_REPORT,
            DOOMED_ACT,
            *worker("the good task", "good result"),
            {"engine": "marvin", "step": "aggregate", "reply": "the report"},
        ]
    )
    # when marvin runs it
    process = marvin(alice, "partly", maxReplans=0, allowPartial=True)
    done = settled(process.pk, Status.CLOSED)
    # then the worker was asked for its result twice, the second time with the error
    reports = [
        call
        for call in of_step(calls, "frankie", "report")
        if any("the doomed task" in message.content for message in call.messages)
    ]
    assert len(reports) == 2
    assert reports[1].last_user.startswith(
        "[control: retry] invalid report_result arguments: arguments: 'findings' is a required"
    )
    # and its node failed with that error, while the tree reported what it has and what not
    tree = {n["id"]: n for n in nodes(done)}
    assert tree["n2"]["status"] == "FAILED"
    assert tree["n2"]["error"].startswith("step report: invalid report_result arguments")
    assert done.close_reason == CloseReason.DONE
    assert done.engine_state["missing"] == ["n2"]
    assert done.engine_state["report"].startswith("the report\n\n**Missing**")
    assert "- n2 Doomed: step report" in done.engine_state["report"]


THREE_SLOW = [
    {
        "engine": "marvin",
        "step": "plan",
        "tool_calls": plan(
            *({"kind": "WORKER", "title": f"Part {n}", "goal": f"part {n}"} for n in range(3))
        ),
    },
    *(rule for n in range(3) for rule in worker(f"part {n}", f"result {n}", delay=1)),
    {"engine": "marvin", "step": "aggregate", "reply": "the report"},
]


def test_three_independent_workers_run_at_the_same_time(alice, script):
    # given three workers that do not depend on each other, each taking a second
    script(THREE_SLOW)
    # when marvin runs them
    done = settled(marvin(alice, "three parts").pk, Status.CLOSED)
    # then their RUNNING intervals overlap: each started before any of them ended
    assert done.close_reason == CloseReason.DONE, done.last_error
    children = list(
        ThinkProcess.objects.filter(parent_id=done.pk).order_by("pk").values_list("pk", flat=True)
    )
    intervals = running_intervals(children)
    assert max(start for start, _ in intervals) < min(end for _, end in intervals)
    assert [n["result"] for n in nodes(done)[1:4]] == [result(f"result {n}") for n in range(3)]


def test_with_max_parallel_one_the_workers_run_one_after_another(alice, script):
    # given the same three workers, one at a time
    script(THREE_SLOW)
    # when marvin runs them
    done = settled(marvin(alice, "three parts", maxParallel=1).pk, Status.CLOSED)
    # then no two RUNNING intervals overlap, in the plan's order
    children = list(
        ThinkProcess.objects.filter(parent_id=done.pk).order_by("pk").values_list("pk", flat=True)
    )
    intervals = running_intervals(children)
    assert all(a[1] <= b[0] for a, b in zip(intervals, intervals[1:], strict=False))


def test_a_worker_that_depends_on_another_waits_for_it_and_reads_its_result(alice, script, calls):
    # given a second worker that depends on the first
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Find", "goal": "find the sources"},
                    {"kind": "WORKER", "title": "Read", "goal": "read them", "dependsOn": [0]},
                ),
            },
            *worker("find the sources", "three sources", delay=0.5),
            *worker("read them", "read all three"),
            {"engine": "marvin", "step": "aggregate", "reply": "the report"},
        ]
    )
    # when marvin runs them
    done = settled(marvin(alice, "sources").pk, Status.CLOSED)
    # then the second started after the first had ended, with its result in its goal
    tree = nodes(done)
    assert tree[2]["dependsOn"] == ["n2"]
    assert tree[2]["startedAt"] >= tree[1]["finishedAt"]
    [act] = [c for c in of_step(calls, "frankie", "act") if "read them" in c.last_user]
    assert "Results it builds on:\n- n2 Find: three sources" in act.last_user


def test_the_digest_folds_the_oldest_nodes_first_to_stay_within_its_budget():
    # given a tree of twenty finished workers with long results
    state = MarvinState.new("a goal")
    for n in range(20):
        node = state.add(state.root, kind="WORKER", title=f"Part {n}", goal=f"part {n}")
        state.mark(node, "DONE" if n != 3 else "FAILED", result=result("x" * 200), error=None)
    # when the digest is made with room for about five lines
    text = digest(state, budget_tokens=300)
    # then the newest lines are there whole and the oldest are counted in one line
    lines = text.splitlines()
    assert lines[0] == "- 16 earlier nodes, summarised: 15 DONE (n2, n3, n4, n6, …), 1 FAILED (n5)"
    assert lines[-1].startswith("- n21 WORKER 'Part 19' DONE: xxx")
    assert len(text) // 4 <= 300


def test_the_aggregate_of_fifty_workers_gives_each_result_its_share_of_the_calls_room():
    # given fifty finished workers with long results, and an aggregate call with room for
    # 2,000 tokens
    state = MarvinState.new("compare fifty things")
    for n in range(50):
        node = state.add(state.root, kind="WORKER", title=f"Thing {n}", goal=f"thing {n}")
        state.mark(node, "DONE", result=result(f"thing {n}: " + "detail " * 300))
    # when the aggregate's ask is made
    ask = aggregate_ask(state, room_tokens=2000)
    # then every worker's result is in it, each cut to its share, and together they fit
    for n in range(50):
        assert f"## Thing {n} (WORKER" in ask
        assert f"thing {n}: detail" in ask
    assert len(ask) // 4 <= 2000
    # and without a known window nothing is cut
    assert "detail " * 300 in aggregate_ask(state)


def test_a_tree_stored_before_versions_loads_and_is_written_back_as_the_current_version():
    # given engine_state as marvin stored it before its tree had a version
    stored = {
        "taskTree": {
            "rootId": "n1",
            "nodes": [
                {
                    "id": "n1",
                    "parentId": None,
                    "kind": "PLAN",
                    "title": "Plan",
                    "goal": "g",
                    "status": "DONE",
                    "result": "1 tasks",
                },
                {
                    "id": "n2",
                    "parentId": "n1",
                    "kind": "WORKER",
                    "title": "W",
                    "goal": "w",
                    "status": "RUNNING",
                    "processId": "tp_9",
                    "startedAt": "2026-01-01T00:00:00Z",
                },
            ],
        },
        "nextId": 3,
        "waiting": {"tp_9": "n2"},
        "steers": ["be brief"],
    }
    # when it is loaded and written back
    state = MarvinState.load(stored)
    written = state.dump()
    # then nothing is lost and the tree says its version
    assert written["taskTree"]["version"] == 2
    assert written["taskTree"]["nodes"][1] == {**stored["taskTree"]["nodes"][1]}
    assert (written["waiting"], written["steers"], written["nextId"]) == (
        {"tp_9": "n2"},
        ["be brief"],
        3,
    )
