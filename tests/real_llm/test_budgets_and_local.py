"""A token budget trips against a server that reports no usage, and a deep think runs to DONE
on the `local` provider, in this process."""

from __future__ import annotations

import pytest

from processes.actions.create import create_process
from processes.models import ThinkProcess
from processes.presenters import process_data
from tests.support.llama_server import LlamaServer
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import closed_process

pytestmark = pytest.mark.django_db(transaction=True)

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def test_a_max_tokens_budget_trips_on_estimated_usage_of_the_real_server(
    alice: Tenancy, real_server: LlamaServer
) -> None:
    # given a worker whose tree may spend 40 tokens, on a server that reports no usage
    session = open_session(alice)
    worker = create_process(
        session,
        goal="Is water wet? Say why.",
        engine="frankie",
        params={"outputSchema": VERDICT, "maxTokens": 40},
    )
    # when it answers (one call: the estimate is well over 40) and asks for its report
    closed = closed_process(worker.pk, timeout=300)
    # then the report's call was refused by the budget, and the spend is counted, estimated
    assert closed.close_reason == "FAILED"
    assert closed.last_error.startswith("budget maxTokens exceeded: the tree of ")
    assert closed.last_error.endswith("the limit is 40")
    usage = process_data(ThinkProcess.objects.get(pk=worker.pk))["usage"]
    assert usage["estimated"] is True
    assert usage["promptTokens"] + usage["completionTokens"] >= 40


def test_a_deep_think_runs_to_done_on_the_local_provider(alice: Tenancy, local_model) -> None:
    session = open_session(alice)
    # with the defaults: the Brain offers SmolLM2 marvin's minimal plan, a small model's
    marvin = create_process(session, goal="Compare Mars and Venus.", recipe="deep-think")
    closed = closed_process(marvin.pk, timeout=540)
    assert closed.close_reason == "DONE", closed.last_error
    nodes = closed.engine_state["taskTree"]["nodes"]
    summary = [(n["id"], n["kind"], n["status"], n.get("error")) for n in nodes]
    # a worker ran as a child process: done with its structured result, or failed (the model
    # got its report wrong) and re-planned
    ran = [n for n in nodes if n["kind"] == "WORKER" and n["status"] in {"DONE", "FAILED"}]
    assert ran, summary
    for node in ran:
        if node["status"] == "DONE":
            assert isinstance(node["result"], dict), summary
        else:
            assert any(n.get("replanOf") for n in nodes), summary
    assert [n["status"] for n in nodes if n["kind"] == "AGGREGATE"][-1] == "DONE", summary
    workers = ThinkProcess.objects.filter(parent_id=marvin.pk)
    assert workers.exists()
    assert all(w.close_reason in {"DONE", "FAILED"} for w in workers)
    assert closed.usage_estimated is True
