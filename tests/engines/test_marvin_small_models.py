"""marvin on a small model: the plan offers the minimal schema (kind, title, goal) when the
model is a small one (the llm.modelSize setting, by default the well-known small models: the
shipped SmolLM2), and a plan such a model gives is kept sensible: no PLAN nested past one
level, and a plan with nothing to do the work becomes one WORKER for the goal and the report.
"""

from __future__ import annotations

from typing import Any

import pytest

from processes.states import CloseReason, Status
from tests.support.marvin import marvin, nodes, plan, worker
from tests.support.recording_llm import RecordingProvider
from tests.support.waiting import settled
from vancetope.llm.scripted import ScriptedProvider
from vancetope.llm.windows import is_small_model

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_shipped_model_and_its_family_are_small_others_are_not() -> None:
    for model in ("SmolLM2-135M-Instruct.Q4_1", "/models/SmolLM2-135M-Instruct.Q4_1.gguf"):
        assert is_small_model(model)
    assert is_small_model("smollm2:135m")
    for model in ("gpt-4o", "claude-sonnet-4-6", "scripted", ""):
        assert not is_small_model(model)


def recording_of(monkeypatch: pytest.MonkeyPatch, model: str) -> RecordingProvider:
    real = ScriptedProvider(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan({"kind": "AGGREGATE", "title": "R"}),
            },
            *worker("", "Saturn has rings."),
            {"engine": "marvin", "step": "aggregate", "reply": "Saturn has rings."},
        ],
        model=model,
    )
    provider = RecordingProvider(real=real)
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: provider)
    return provider


def plan_items(provider: RecordingProvider) -> dict[str, Any]:
    [offered] = [
        tools
        for tools, (_, info) in zip(provider.tools, provider.calls, strict=True)
        if info is not None and info.step == "plan"
    ]
    return offered[0].parameters["properties"]["tasks"]["items"]


@pytest.mark.parametrize(
    ("model", "size", "fields"),
    [
        ("SmolLM2-135M-Instruct.Q4_1", "auto", {"kind", "title", "goal"}),
        ("gpt-4o", "auto", {"kind", "title", "goal", "recipe", "dependsOn", "outputSchema"}),
        ("gpt-4o", "small", {"kind", "title", "goal"}),
    ],
)
def test_a_small_model_is_offered_the_minimal_plan_and_a_plan_without_workers_gets_one(
    alice, monkeypatch, model: str, size: str, fields: set[str]
) -> None:
    # given a model (small or not, by the table or the llm.modelSize setting) whose plan
    # lists only the report
    provider = recording_of(monkeypatch, model)
    if size != "auto":
        body = {"scope": "project", "scopeId": alice.project_id, "value": size}
        answer = alice.api().put("/api/settings/llm.modelSize", body, format="json")
        assert answer.status_code == 200, answer.json()
    # when a deep think plans
    process = marvin(alice, "study Saturn's rings")
    done = settled(process.pk, Status.CLOSED)
    # then the plan step offered the schema that fits the model
    assert set(plan_items(provider)["properties"]) == fields
    # and the plan that had nothing to do the work ran one WORKER for the goal, then the report
    assert done.close_reason == CloseReason.DONE, done.last_error
    kinds = [(n["kind"], n["status"]) for n in nodes(done) if n.get("parentId")]
    assert kinds == [("WORKER", "DONE"), ("AGGREGATE", "DONE")]
    worker_node = next(n for n in nodes(done) if n["kind"] == "WORKER")
    assert worker_node["goal"] == "study Saturn's rings"


def test_a_plan_nested_in_a_planned_part_runs_as_a_worker(alice, script) -> None:
    # given a model that plans a part to plan later, and plans a PLAN again inside it
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "match": "",
                "times": 1,
                "tool_calls": plan(
                    {"kind": "PLAN", "title": "Moons"}, {"kind": "AGGREGATE", "title": "R"}
                ),
            },
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan({"kind": "PLAN", "title": "Inner moons"}),
            },
            *worker("", "Saturn has inner moons."),
            {"engine": "marvin", "step": "aggregate", "reply": "Report."},
        ]
    )
    # when a deep think runs
    process = marvin(alice, "study Saturn")
    done = settled(process.pk, Status.CLOSED)
    # then the inner PLAN ran as a worker: the tree is one PLAN deep, and it closed DONE
    assert done.close_reason == CloseReason.DONE, done.last_error
    tree = {n["title"]: (n["kind"], n["status"]) for n in nodes(done)}
    assert tree["Moons"] == ("PLAN", "DONE")
    assert tree["Inner moons"] == ("WORKER", "DONE")
