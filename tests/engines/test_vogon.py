"""vogon: a strategy's phases, each a worker, its gate and its checkpoint, in the lane.

Driven by scripted-provider scripts written from docs/engines.md's steps table: vogon's phase
workers are frankie (recipe `vogon-worker`), step `act` for the work and, for a phase that
declares an output, step `report` with a `report_result` call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from engines.registry import get_engine
from inbox.models import InboxItem
from inbox.services import do_answer
from processes.actions import create, lifecycle, steer
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from processes.recovery import recover_processes
from processes.states import CloseReason, Status
from recipes_app.models import RecipeScope, Strategy
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import settled, wait_until
from tests.support.ws import bearer, connect
from tests.support.ws import open_session as open_socket_session
from vancetope.errors import BadRequest
from vancetope.llm.base import CallInfo
from vancetope.llm.scripted import ScriptedProvider

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}, "confidence": {"type": "number"}},
    "required": ["verdict", "confidence"],
}


def three_phases(**review: Any) -> dict[str, Any]:
    """Collect, review (structured, gated), publish."""
    return {
        "name": "collect-review-publish",
        "phases": [
            {"name": "collect", "goal": "collect facts about ${goal}"},
            {
                "name": "review",
                "goal": "review these facts: ${collect.result}",
                "output": VERDICT,
                "gate": {
                    "all": [
                        {"field": "verdict", "op": "==", "value": "pass"},
                        {"field": "confidence", "op": ">=", "value": 0.7},
                    ]
                },
                **review,
            },
            {"name": "publish", "goal": "publish: ${collect.result}"},
        ],
    }


def report(**output: Any) -> list[dict[str, Any]]:
    return [{"name": "report_result", "arguments": output}]


def vogon(
    tenancy: Tenancy,
    goal: str,
    strategy: Any,
    *,
    recipe: str = "vogon",
    session: Session | None = None,
) -> ThinkProcess:
    return create.create_process(
        session or open_session(tenancy), goal=goal, recipe=recipe, params={"strategy": strategy}
    )


def phases(process: ThinkProcess) -> list[tuple[str, str]]:
    state = process.engine_params["strategyState"]
    return [(record["name"], record["status"]) for record in state["phases"]]


def children(process: ThinkProcess) -> list[ThinkProcess]:
    return list(ThinkProcess.objects.filter(parent=process).order_by("pk"))


@pytest.mark.django_db(transaction=True)
def test_three_phases_stop_at_a_failing_gate_that_names_its_condition(alice, script):
    # given a script for the first two phases' workers; the review fails its verdict
    script(
        [
            {"recipe": "vogon-worker", "step": "act", "match": "^collect", "reply": "9 moons"},
            {"recipe": "vogon-worker", "step": "act", "match": "^review", "reply": "too few"},
            {
                "recipe": "vogon-worker",
                "step": "report",
                "tool_calls": report(verdict="fail", confidence=0.9),
            },
        ]
    )
    # when vogon runs the strategy
    done = settled(vogon(alice, "Saturn", three_phases()).pk, Status.CLOSED)
    # then it stopped at the review's gate, naming the condition and the value it saw
    assert done.close_reason == CloseReason.FAILED
    assert done.last_error == (
        'phase review: gate failed at phases[1].gate.all[0]: verdict == "pass" (actual: "fail")'
    )
    assert phases(done) == [("collect", "DONE"), ("review", "FAILED"), ("publish", "PENDING")]
    # and its task tree says the phases run one after another (no client draws them at once)
    tree = done.engine_state["taskTree"]["nodes"]
    assert [(n["id"], n.get("dependsOn")) for n in tree if n["kind"] == "WORKER"] == [
        ("phase-1", None),
        ("phase-2", ["phase-1"]),
        ("phase-3", ["phase-2"]),
    ]
    # the third phase never started: two workers, the review's with the phase's goal filled in
    collect, review = children(done)
    assert review.goal == "review these facts: 9 moons"
    assert (review.recipe_name, review.engine_params["outputSchema"]) == ("vogon-worker", VERDICT)
    assert review.engine_state["output"] == {"verdict": "fail", "confidence": 0.9}
    # and its parent would read which condition failed, with the actual value
    summary = get_engine("vogon").summarize_for_parent(done, "FAILED")
    failed = summary.payload["failedCondition"]
    assert (failed["phase"], failed["at"], failed["actual"]) == (
        "review",
        "phases[1].gate.all[0]",
        "fail",
    )
    assert [p["status"] for p in summary.payload["phases"]] == ["DONE", "FAILED", "PENDING"]
    assert summary.payload["phases"][1]["output"] == {"verdict": "fail", "confidence": 0.9}
    assert 'verdict == "pass" (actual: "fail")' in summary.human_summary


@pytest.mark.django_db(transaction=True)
def test_an_any_gate_fails_only_when_no_member_holds_and_reports_each(alice, script):
    gate = {
        "any": [
            {"field": "result", "op": "contains", "value": "approved"},
            {"field": "confidence", "op": ">", "value": 0.95},
        ]
    }
    script(
        [
            {"recipe": "vogon-worker", "step": "act", "match": "^review", "reply": "not sure"},
            {"recipe": "vogon-worker", "step": "act", "reply": "facts"},
            {
                "recipe": "vogon-worker",
                "step": "report",
                "tool_calls": report(verdict="pass", confidence=0.5),
            },
        ]
    )
    done = settled(vogon(alice, "Saturn", three_phases(gate=gate)).pk, Status.CLOSED)
    assert done.close_reason == CloseReason.FAILED
    assert done.last_error == (
        "phase review: gate failed at phases[1].gate.any[0]: "
        'result contains "approved" (actual: "not sure"); confidence > 0.95 (actual: 0.5)'
    )


@pytest.mark.django_db(transaction=True)
def test_a_passing_gate_goes_on_and_the_synthesis_is_the_report(alice, script):
    script(
        [
            {"recipe": "vogon-worker", "step": "act", "match": "^collect", "reply": "9 moons"},
            {"recipe": "vogon-worker", "step": "act", "match": "^review", "reply": "fine"},
            {"recipe": "vogon-worker", "step": "act", "match": "^publish", "reply": "Published."},
            {
                "recipe": "vogon-worker",
                "step": "report",
                "tool_calls": report(verdict="pass", confidence=0.8),
            },
        ]
    )
    done = settled(vogon(alice, "Saturn", three_phases()).pk, Status.CLOSED)
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    assert phases(done) == [("collect", "DONE"), ("review", "DONE"), ("publish", "DONE")]
    summary = get_engine("vogon").summarize_for_parent(done, "DONE")
    assert summary.human_summary.endswith("## publish\n\nPublished.")
    assert summary.payload["report"] == summary.human_summary
    assert "| review | DONE | gate passed |" in summary.human_summary
    # the client saw the phases as a task tree, and the synthesis as vogon's answer
    events = SessionEvent.objects.filter(session_id=done.session_id)
    trees = [e.data["tree"] for e in events.filter(event="task-tree").order_by("seq")]
    assert [n["status"] for n in trees[-1]["nodes"]] == ["DONE"] * 4
    assert events.filter(event="chat-message", data__text=summary.human_summary).exists()


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_report_is_invalid_twice_fails_the_phase_with_its_error(alice, script):
    script(
        [
            {"recipe": "vogon-worker", "step": "act", "reply": "facts"},
            {"recipe": "vogon-worker", "step": "report", "tool_calls": report(verdict="maybe")},
        ]
    )
    done = settled(vogon(alice, "Saturn", three_phases()).pk, Status.CLOSED)
    review = children(done)[1]
    assert review.close_reason == CloseReason.FAILED
    assert review.last_error.startswith("step report: invalid report_result arguments: ")
    assert done.close_reason == CloseReason.FAILED
    assert done.last_error.startswith(
        f"phase review: worker {review.public_id} FAILED: step report: invalid report_result"
    )


def checkpointed(title: str = "Ship ${goal}?") -> dict[str, Any]:
    return {
        "name": "write-ship",
        "phases": [
            {"name": "write", "goal": "write about ${goal}", "checkpoint": {"title": title}},
            {"name": "ship", "goal": "ship: ${write.result}"},
        ],
    }


@pytest.mark.django_db(transaction=True)
def test_a_checkpoint_waits_for_an_approval_and_a_reject_ends_it_with_the_reason(alice, script):
    # given a top-level vogon that posts to the inbox itself (vogon-cron)
    script([{"recipe": "vogon-worker", "step": "act", "reply": "A text about rings."}])
    process = vogon(alice, "rings", checkpointed(), recipe="vogon-cron")
    # when the first phase's worker is done, vogon waits for an APPROVAL of its result
    blocked = settled(process.pk, Status.BLOCKED)
    assert phases(blocked) == [("write", "APPROVAL"), ("ship", "PENDING")]
    item = InboxItem.objects.get(kind="APPROVAL")
    assert (item.title, item.body, item.origin_process_id) == (
        "Ship rings?",
        "A text about rings.",
        process.pk,
    )
    # and a reject with a reason
    answered = do_answer(alice.user, item.public_id, {"decision": "reject", "comment": "too short"})
    assert answered.delivered
    done = settled(process.pk, Status.CLOSED)
    # then the strategy ended with that reason, and the second phase never ran
    assert (done.close_reason, done.last_error) == (
        CloseReason.FAILED,
        "phase write: rejected: too short",
    )
    assert phases(done) == [("write", "REJECTED"), ("ship", "PENDING")]
    assert len(children(done)) == 1
    # and the synthesis is left in the inbox (vogon-cron's recipe)
    [synthesis] = InboxItem.objects.filter(kind="OUTPUT_TEXT")
    assert "Failed: phase write: rejected: too short" in synthesis.body


@pytest.mark.django_db(transaction=True)
def test_an_approval_goes_on_to_the_next_phase_and_the_synthesis_is_left_in_the_inbox(
    alice, script
):
    script(
        [
            {"recipe": "vogon-worker", "step": "act", "match": "^write", "reply": "Rings."},
            {"recipe": "vogon-worker", "step": "act", "match": "^ship: Rings", "reply": "Shipped."},
        ]
    )
    process = vogon(alice, "rings", checkpointed(), recipe="vogon-cron")
    settled(process.pk, Status.BLOCKED)
    item = InboxItem.objects.get(kind="APPROVAL")
    do_answer(alice.user, item.public_id, {"decision": "approve", "comment": "good"})
    done = settled(process.pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    assert phases(done) == [("write", "DONE"), ("ship", "DONE")]
    [synthesis] = InboxItem.objects.filter(kind="OUTPUT_TEXT")
    assert synthesis.title == "Strategy write-ship: rings"
    assert "| write | DONE | approved: good |" in synthesis.body
    assert synthesis.body.endswith("## ship\n\nShipped.")


@pytest.mark.django_db(transaction=True)
def test_without_the_inbox_a_checkpoint_asks_the_parent_and_understands_its_words(alice, script):
    # given a plain vogon (no inbox_post): its checkpoint is a BLOCKED report for its parent
    script([{"recipe": "vogon-worker", "step": "act", "reply": "Rings."}])
    process = vogon(alice, "rings", checkpointed())
    blocked = settled(process.pk, Status.BLOCKED)
    summary = get_engine("vogon").summarize_for_parent(blocked, "BLOCKED")
    assert summary.payload["approval"] is True
    assert summary.payload["options"] == ["approve", "reject"]
    assert summary.payload["question"] == "Ship rings?\n\nRings."
    # a root vogon has no parent: the Brain asks its person in the parent's place (once the
    # lane's run is over)
    asked = InboxItem.objects.filter(origin_process_id=process.pk)
    assert wait_until(asked.exists)
    [first] = asked
    assert (first.kind, first.status, first.body) == ("APPROVAL", "OPEN", "Ship rings?\n\nRings.")
    # when the answer is neither approve nor reject, it asks again, saying so
    steer.steer_process(process.pk, "hmm, maybe")
    again = settled(process.pk, Status.BLOCKED)
    asked = get_engine("vogon").summarize_for_parent(again, "BLOCKED").payload["question"]
    assert "Not understood: 'hmm, maybe'" in asked
    # and the item asks the new question; the old one is put away
    assert wait_until(
        InboxItem.objects.filter(origin_process_id=process.pk, status="OPEN", body=asked).exists
    )
    first.refresh_from_db()
    assert first.status == "DISMISSED"
    [second] = InboxItem.objects.filter(origin_process_id=process.pk, status="OPEN")
    assert second.body == asked
    # and a reject in words ends it with the reason
    steer.steer_process(process.pk, "reject: not about rings")
    done = settled(process.pk, Status.CLOSED)
    assert done.last_error == "phase write: rejected: not about rings"


def arthur_session(tenancy: Tenancy) -> Session:
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="arthur",
    )


@pytest.mark.django_db(transaction=True)
def test_arthur_posts_vogons_approval_and_steers_the_answer_back(alice, script):
    # given arthur, asked to run a strategy with a checkpoint
    create_vogon = {
        "name": "process_create",
        "arguments": {"recipe": "vogon", "goal": "rings", "params": {"strategy": checkpointed()}},
    }
    script(
        [
            {"engine": "arthur", "match": "^run it$", "times": 1, "tool_calls": [create_vogon]},
            {"engine": "arthur", "match": "^run it$", "reply": "Started."},
            {
                "engine": "arthur",
                "match": r"^\[report from tp_\d+ \(vogon\): DONE\]",
                "reply": "Shipped!",
            },
            {"recipe": "vogon-worker", "match": "^write", "reply": "Rings."},
            {"recipe": "vogon-worker", "match": "^ship", "reply": "Shipped."},
        ]
    )
    session = arthur_session(alice)
    steer.send_chat(session.pk, "run it")
    # when vogon reaches its checkpoint, arthur posts an APPROVAL item for it
    item = wait_until(lambda: InboxItem.objects.filter(kind="APPROVAL").first(), timeout=20)
    [process] = ThinkProcess.objects.filter(parent_id=session.chat_process_id)
    assert process.think_engine == "vogon"
    assert (item.title, item.origin_process_id) == (
        f"{process.public_id} asks for approval",
        session.chat_process_id,
    )
    assert item.body == "Ship rings?\n\nRings."
    # and the person's approval goes back to vogon, which finishes; arthur tells the person
    assert do_answer(alice.user, item.public_id, {"decision": "approve"}).delivered
    done = settled(process.pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    assert phases(done) == [("write", "DONE"), ("ship", "DONE")]
    events = SessionEvent.objects.filter(session_id=session.pk, event="chat-message")
    wait_until(lambda: events.filter(data__text="Shipped!").exists())


@pytest.mark.django_db(transaction=True)
def test_an_invalid_strategy_is_refused_before_the_process_exists_with_the_field_named(alice):
    strategy = three_phases()
    strategy["phases"][1]["gate"]["all"][0]["op"] = "approx"
    with pytest.raises(BadRequest) as refused:
        vogon(alice, "Saturn", strategy)
    assert refused.value.field == "params.strategy.phases[1].gate.all[0].op"
    assert refused.value.message.startswith(
        "params.strategy.phases[1].gate.all[0].op: 'approx' is not one of ['==', "
    )
    assert not ThinkProcess.objects.filter(think_engine="vogon").exists()


@pytest.mark.django_db(transaction=True)
def test_a_strategy_named_nowhere_or_a_phase_recipe_that_does_not_exist_is_refused(alice):
    with pytest.raises(BadRequest, match="params.strategy: no strategy 'nope' in project"):
        vogon(alice, "x", "nope")
    strategy = checkpointed()
    strategy["phases"][1]["recipe"] = "no-such-recipe"
    with pytest.raises(BadRequest) as refused:
        vogon(alice, "x", strategy)
    assert refused.value.field == "params.strategy.phases[1].recipe"
    assert not ThinkProcess.objects.filter(think_engine="vogon").exists()


@pytest.mark.django_db(transaction=True)
def test_arthurs_process_create_of_an_invalid_strategy_is_a_tool_error_naming_the_field(
    alice, script
):
    strategy = checkpointed()
    strategy["phases"][0]["checkpoint"] = {"body": "no title"}
    create_vogon = {
        "name": "process_create",
        "arguments": {"recipe": "vogon", "goal": "x", "params": {"strategy": strategy}},
    }
    script(
        [
            {"engine": "arthur", "match": "^go$", "times": 1, "tool_calls": [create_vogon]},
            {"engine": "arthur", "reply": "It was refused."},
        ]
    )
    session = arthur_session(alice)
    steer.send_chat(session.pk, "go")
    arthur = settled(session.chat_process_id, Status.IDLE)
    tool_messages = arthur.conversation.filter(role="tool")
    assert [m.content for m in tool_messages] == [
        "error: params.strategy.phases[0].checkpoint: 'title' is a required property"
    ]
    assert not ThinkProcess.objects.filter(think_engine="vogon").exists()


@pytest.mark.django_db(transaction=True)
def test_a_project_strategy_overrides_the_bundled_one_and_a_process_keeps_its_copy(alice, script):
    # given a project strategy named like the bundled draft-review-ship
    Strategy.objects.create(
        name="draft-review-ship",
        scope=RecipeScope.PROJECT,
        project=alice.project,
        tenant=alice.tenant,
        phases=[{"name": "only", "goal": "just ${goal}", "checkpoint": {"title": "ok?"}}],
    )
    script([{"recipe": "vogon-worker", "reply": "done it"}])
    # when vogon runs without naming a strategy (its default is draft-review-ship)
    session = open_session(alice)
    process = create.create_process(session, goal="it", recipe="vogon")
    # then it runs the project's, a copy of it
    assert process.engine_params["strategy"]["scope"] == "project"
    settled(process.pk, Status.BLOCKED)
    Strategy.objects.filter(scope=RecipeScope.PROJECT).update(phases=[])
    steer.steer_process(process.pk, "approve")
    done = settled(process.pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    assert [c.goal for c in children(done)] == ["just it"]


@pytest.mark.django_db(transaction=True)
def test_the_bundled_draft_review_ship_runs_its_four_phases(alice, script):
    script(
        [
            {"recipe": "vogon-worker", "step": "act", "match": "^Research", "reply": "Notes."},
            {
                "recipe": "vogon-worker",
                "step": "act",
                "match": "^Write a complete",
                "reply": "Draft.",
            },
            {"recipe": "vogon-worker", "step": "act", "match": "^Review", "reply": "Good."},
            {
                "recipe": "vogon-worker",
                "step": "report",
                "tool_calls": report(verdict="pass", confidence=0.9, comments="shorter intro"),
            },
            {
                "recipe": "vogon-worker",
                "step": "act",
                "match": "^Write the final",
                "reply": "Final.",
            },
        ]
    )
    process = vogon(alice, "a note on Saturn", "draft-review-ship", recipe="vogon-cron")
    settled(process.pk, Status.BLOCKED)
    research, draft, review, ship = children(ThinkProcess.objects.get(pk=process.pk))
    assert "Notes." in draft.goal
    assert "Draft." in review.goal
    assert "Apply the reviewer's comments: shorter intro" in ship.goal
    item = InboxItem.objects.get(kind="APPROVAL")
    assert (item.title, item.body) == ("Ship the final version? a note on Saturn", "Final.")
    do_answer(alice.user, item.public_id, {"decision": "approve"})
    done = settled(process.pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    assert [status for _, status in phases(done)] == ["DONE"] * 4


@pytest.mark.django_db(transaction=True)
def test_arthur_sub_works_a_phase_and_its_answer_is_the_phases_result(alice, script):
    # given a phase whose worker is arthur-sub (arthur without inbox_post, as a worker)
    strategy = {
        "phases": [
            {"name": "think", "goal": "think about ${goal}", "recipe": "arthur-sub"},
            {"name": "say", "goal": "say ${think.result}"},
        ]
    }
    script(
        [
            {"recipe": "arthur-sub", "step": "chat", "reply": "Deep thoughts."},
            {"recipe": "vogon-worker", "match": "^say Deep thoughts.$", "reply": "Said."},
        ]
    )
    done = settled(vogon(alice, "stars", strategy).pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    sub, _ = children(done)
    assert (sub.think_engine, sub.close_reason) == ("arthur", CloseReason.DONE)
    assert done.engine_params["strategyState"]["phases"][0]["result"] == "Deep thoughts."


class CountingProvider(ScriptedProvider):
    """The scripted provider, counting the calls of each step per recipe and message."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.calls: list[tuple[str, str, str]] = []

    def stream(
        self,
        messages: Any,
        tools: Any = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Any:
        info = info or CallInfo()
        last = next((m.content for m in reversed(messages) if m.role == "user"), "")
        self.calls.append((info.recipe, info.step, last))
        return super().stream(messages, tools, info, force_tool=force_tool)


@pytest.mark.django_db(transaction=True)
def test_a_finished_phase_never_runs_again_after_a_suspend_resume_and_recovery(alice, monkeypatch):
    # given a slow second phase, so vogon is interrupted while its worker runs
    provider = CountingProvider(
        [
            {"recipe": "vogon-worker", "match": "^collect", "reply": "facts"},
            {"recipe": "vogon-worker", "match": "^check", "reply": "checked", "delay": 1},
        ]
    )
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: provider)
    strategy = {
        "phases": [
            {"name": "collect", "goal": "collect ${goal}"},
            {"name": "check", "goal": "check ${collect.result}", "checkpoint": {"title": "ok?"}},
        ]
    }
    process = vogon(alice, "stars", strategy)
    wait_until(lambda: phases(ThinkProcess.objects.get(pk=process.pk))[1][1] == "RUNNING")
    # when it is suspended and resumed, and the Brain's recovery runs, while phase two works
    lifecycle.suspend_process(process.pk)
    lifecycle.resume_process(process.pk)
    recover_processes()
    blocked = settled(process.pk, Status.BLOCKED)
    steer.steer_process(process.pk, "approve")
    done = settled(process.pk, Status.CLOSED)
    # then each phase's worker ran once, and so did each worker's act step
    assert done.close_reason == CloseReason.DONE
    assert phases(blocked) == [("collect", "DONE"), ("check", "APPROVAL")]
    acts = [
        last for recipe, step, last in provider.calls if (recipe, step) == ("vogon-worker", "act")
    ]
    assert acts == ["collect stars", "check facts"]
    assert len(children(done)) == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_process_create_over_the_socket_refuses_an_invalid_strategy_naming_the_field(alice):
    client = await connect(bearer(alice))
    await open_socket_session(client, alice)
    strategy = three_phases()
    strategy["phases"][1]["gate"]["all"][1]["value"] = "high"
    reply = await client.request(
        "process-create", {"recipe": "vogon", "goal": "x", "params": {"strategy": strategy}}
    )
    assert reply["type"] == "error"
    assert (reply["data"]["code"], reply["data"]["field"]) == (
        400,
        "data.params.strategy.phases[1].gate.all[1].value",
    )
    assert reply["data"]["message"] == (
        "data.params.strategy.phases[1].gate.all[1].value: 'high' is not of type 'number'"
    )
    await client.ws.disconnect()


def vogon_section_yaml() -> list[Any]:
    """The YAML blocks of docs/engines.md's vogon section: the strategy, then the script."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "engines.md"
    section = docs.read_text().split("\n## vogon\n", 1)[1].split("\n## ", 1)[0]
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", section, re.S)]


@pytest.mark.django_db(transaction=True)
def test_the_strategy_and_script_of_docs_engines_md_drive_vogon_as_it_says(alice, script):
    # given the vogon section's example strategy and script, as they are written there
    [[strategy], rules] = vogon_section_yaml()
    script(rules)
    # when vogon runs it
    done = settled(vogon(alice, "Saturn", strategy).pk, Status.CLOSED)
    # then the review fails its gate, with the error the page shows
    assert done.last_error == (
        'phase review: gate failed at phases[1].gate.all[0]: verdict == "pass" (actual: "fail")'
    )
