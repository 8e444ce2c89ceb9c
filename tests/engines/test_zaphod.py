"""zaphod: a council of ford heads, each its own sub-process, and a synthesizer with a fallback.

Driven by scripted-provider scripts written from docs/engines.md's steps table (ford `head` for
the heads, matched by persona in their system prompt; zaphod `synthesize` through
`council_synthesis`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from inbox.models import InboxItem
from processes.actions import create, lifecycle, steer
from processes.actions.sessions import create_session
from processes.models import ConversationMessage, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData
from tests.config.helpers import set_value
from tests.support.tenancy import open_session
from tests.support.waiting import at_rest, wait_until
from vancetope.config.models import Scope

QUESTION = "Should we ship on Friday?"
ANSWERS = {
    "skeptic": "Fridays are risky: nobody is around to fix what breaks.",
    "optimist": "Ship it: users get the feature three days sooner.",
    "pragmatist": "Ship on Friday morning, with someone on call.",
}
SYNTHESIS = {
    "consensus": "Shipping is worth it if something that breaks can be fixed.",
    "differences": [
        {"head": "optimist", "position": "Ship now for the users."},
        {"head": "pragmatist", "position": "Ship in the morning, with someone on call."},
    ],
    "conclusion": "Ship on Friday morning with someone on call.",
    "minorityReport": "Waiting until Monday is safer still.",
}
PROVIDER_DOWN = "the LLM provider failed: LlmError: rate limited"


def head_rules(*failing: str) -> list[dict[str, Any]]:
    """Each head answers in its persona (matched in its system prompt); `failing` heads'
    provider fails every call."""
    rules: list[dict[str, Any]] = []
    for name, answer in ANSWERS.items():
        persona = f"system: Your persona: {name}\\."
        if name in failing:
            rules.append({"recipe": "zaphod-head", "match": persona, "error": "rate limited"})
        else:
            rules.append({"engine": "ford", "step": "head", "match": persona, "reply": answer})
    return rules


def synthesize(**rule: Any) -> dict[str, Any]:
    call = {"name": "council_synthesis", "arguments": SYNTHESIS}
    return {"engine": "zaphod", "step": "synthesize", "tool_calls": [call], **rule}


def council(session: Session, parent: ThinkProcess | None = None, **params: Any) -> ThinkProcess:
    return create.create_process(
        session, goal=QUESTION, recipe="zaphod", params=params or None, parent=parent
    )


def heads(process: ThinkProcess) -> dict[str, dict[str, Any]]:
    return {head["name"]: head for head in process.engine_state["heads"]}


def conversation(process_id: str) -> list[tuple[str, str]]:
    rows = ConversationMessage.objects.filter(process_id=int(process_id.removeprefix("tp_")))
    return list(rows.order_by("index").values_list("role", "content"))


def said(session: Session, process: ThinkProcess) -> list[str]:
    events = SessionEvent.objects.filter(session_id=session.pk, event="chat-message")
    return [
        e.data["text"]
        for e in events.order_by("seq")
        if e.data["role"] == "assistant" and e.data["processId"] == process.public_id
    ]


@pytest.mark.django_db(transaction=True)
def test_three_personas_answer_each_in_its_own_process_and_the_report_has_the_four_sections(
    alice, script
):
    # given three heads that answer and a synthesizer, and a parent that collects reports
    script([*head_rules(), synthesize()])
    session = open_session(alice)
    parent = create.create_process(session, goal="", engine="ford")
    lifecycle.pause_process(parent.pk)
    # when the council is asked
    done = at_rest(council(session, parent).pk, Status.CLOSED)
    # then it is DONE with the four sections, as the synthesizer gave them
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    assert done.engine_state["sections"] == SYNTHESIS
    report = done.engine_state["report"]
    assert report == (
        "## Consensus\n\nShipping is worth it if something that breaks can be fixed.\n\n"
        "## Differences\n\n- **optimist**: Ship now for the users.\n"
        "- **pragmatist**: Ship in the morning, with someone on call.\n\n"
        "## Conclusion\n\nShip on Friday morning with someone on call.\n\n"
        "## Minority report\n\nWaiting until Monday is safer still."
    )
    # each head ran as its own ford child, with its question and answer in its conversation
    children = ThinkProcess.objects.filter(parent=done).order_by("pk")
    assert [(c.think_engine, c.recipe_name) for c in children] == [("ford", "zaphod-head")] * 3
    assert all(c.close_reason == CloseReason.DONE for c in children)
    by_name = heads(done)
    assert [h["processId"] for h in by_name.values()] == [c.public_id for c in children]
    for name, answer in ANSWERS.items():
        assert conversation(by_name[name]["processId"]) == [
            ("user", QUESTION),
            ("assistant", answer),
        ]
        assert (by_name[name]["status"], by_name[name]["answer"]) == ("DONE", answer)
    # and the report went to the chat and, with the heads and sections, to the parent
    assert said(session, done) == [report]
    message = wait_until(
        lambda: PendingMessage.objects.filter(process_id=parent.pk, kind="PARENT_REPORT").first()
    )
    assert message.payload["text"] == report
    payload = message.payload["payload"]
    assert payload["sections"] == SYNTHESIS
    assert payload["heads"] == [
        {
            "name": name,
            "persona": by_name[name]["persona"],
            "processId": by_name[name]["processId"],
            "status": "DONE",
            "error": None,
        }
        for name in ANSWERS
    ]


@pytest.mark.django_db(transaction=True)
def test_a_head_whose_provider_fails_is_named_with_its_error_and_the_quorum_goes_on(alice, script):
    # given a council whose skeptic's provider fails every call
    script([*head_rules("skeptic"), synthesize()])
    session = open_session(alice)
    # when the council is asked
    done = at_rest(council(session).pk, Status.CLOSED)
    # then the two others make a quorum (a majority) and the synthesis is the report
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    skeptic = heads(done)["skeptic"]
    assert (skeptic["status"], skeptic["error"]) == ("FAILED", PROVIDER_DOWN)
    # and the report names the skeptic and its error
    report = done.engine_state["report"]
    assert report.startswith("## Consensus\n\n")
    assert report.endswith(
        f"## Heads that did not answer\n\n- **skeptic ({skeptic['processId']}): {PROVIDER_DOWN}**"
    )
    # and the waiting skeptic was stopped, the others finished with their answers
    children = {c.public_id: c for c in ThinkProcess.objects.filter(parent=done)}
    stopped = children[skeptic["processId"]]
    assert (stopped.close_reason, stopped.last_error) == (CloseReason.STOPPED, PROVIDER_DOWN)
    assert sorted(c.close_reason for c in children.values()) == ["DONE", "DONE", "STOPPED"]
    notices = SessionEvent.objects.filter(session_id=session.pk, event="notification")
    assert f"council head skeptic failed: {PROVIDER_DOWN}" in [n.data["text"] for n in notices]


@pytest.mark.django_db(transaction=True)
def test_a_council_without_its_quorum_fails_naming_each_failed_head_and_its_error(alice, script):
    # given two of three heads whose provider fails
    script([*head_rules("skeptic", "optimist"), synthesize()])
    # when the council is asked
    failed = at_rest(council(open_session(alice)).pk, Status.CLOSED)
    # then it fails before synthesizing, naming both heads with their errors
    by_name = heads(failed)
    assert failed.close_reason == CloseReason.FAILED
    assert failed.last_error == (
        "quorum not met: 1 of 3 heads answered, 2 needed; failed: "
        f"skeptic ({by_name['skeptic']['processId']}): {PROVIDER_DOWN}; "
        f"optimist ({by_name['optimist']['processId']}): {PROVIDER_DOWN}"
    )
    assert "sections" not in failed.engine_state


@pytest.mark.django_db(transaction=True)
def test_a_quorum_param_of_one_lets_a_single_answer_through(alice, script):
    # given two failing heads, a quorum of one, and a synthesis of the one answer
    alone = {**SYNTHESIS, "differences": [{"head": "pragmatist", "position": "In the morning."}]}
    call = {"name": "council_synthesis", "arguments": alone}
    script([*head_rules("skeptic", "optimist"), synthesize(tool_calls=[call])])
    # when the council is asked
    done = at_rest(council(open_session(alice), quorum=1).pk, Status.CLOSED)
    # then the one answer is synthesized, and both failed heads are named in the report
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    assert done.engine_state["sections"] == alone
    assert done.engine_state["report"].count(PROVIDER_DOWN) == 2


@pytest.mark.django_db(transaction=True)
def test_a_difference_attributed_to_a_head_that_did_not_answer_fails_the_synthesis(alice, script):
    # given a failing optimist, and a synthesizer that still attributes a position to it
    script([*head_rules("optimist"), synthesize()])
    # when the council (without a fallback model) is asked
    failed = at_rest(council(open_session(alice)).pk, Status.CLOSED)
    # then the synthesis was refused (after its retry), saying which head is not one that answered
    assert failed.close_reason == CloseReason.FAILED
    assert failed.last_error == (
        "synthesize failed with the configured model: step synthesize: invalid "
        "council_synthesis arguments: differences/0/head: 'optimist' is not one of "
        "['skeptic', 'pragmatist']; then with no fallback model (params.fallbackModel, "
        "VANCETOPE_LLM_FALLBACK_MODEL)"
    )


@pytest.mark.django_db(transaction=True)
def test_a_failing_synthesizer_falls_back_to_the_fallback_model(alice, script, settings):
    # given a synthesizer whose configured model is down and a fallback model that answers
    settings.VANCETOPE_LLM_FALLBACK_MODEL = "backup-model"
    script(
        [
            *head_rules(),
            synthesize(model="backup-model"),
            {"step": "synthesize", "error": "overloaded"},
        ]
    )
    # when the council is asked
    done = at_rest(council(open_session(alice)).pk, Status.CLOSED)
    # then the fallback's synthesis is the report, and the first error is kept
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    assert done.engine_state["sections"] == SYNTHESIS
    assert done.engine_state["synthesis"] == {
        "model": "backup-model",
        "errors": ["the configured model: the LLM provider failed: overloaded"],
    }


@pytest.mark.django_db(transaction=True)
def test_a_council_whose_synthesizer_and_fallback_both_fail_fails_with_both_errors(alice, script):
    # given a configured model that gives no council_synthesis call and a fallback that is down
    script(
        [
            *head_rules(),
            {"step": "synthesize", "model": "backup-model", "error": "overloaded"},
            {"step": "synthesize", "reply": "I would rather not."},
        ]
    )
    # when the council (with its fallback, a model the project configures, as a param) is asked
    set_value("llm.models", Scope.PROJECT, alice.project, ["backup-model"])
    failed = at_rest(council(open_session(alice), fallbackModel="backup-model").pk, Status.CLOSED)
    # then it fails with both errors
    assert failed.close_reason == CloseReason.FAILED
    assert failed.last_error == (
        "synthesize failed with the configured model: step synthesize: no council_synthesis "
        "call in the answer; then with model backup-model: the LLM provider failed: overloaded"
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"personas": []}, "params.personas: must be a non-empty list of {name, persona}"),
        ({"personas": [{"name": "a"}]}, "params.personas[0].persona: must be a non-empty string"),
        (
            {"personas": [{"name": "a", "persona": "x"}, {"name": "a", "persona": "y"}]},
            "params.personas[1].name: 'a' is already the name of another head",
        ),
        ({"quorum": 4}, "params.quorum: must be an integer from 1 to 3, got 4"),
    ],
)
def test_a_council_with_bad_params_fails_at_start_naming_the_field(alice, params, error):
    # when a council is created with bad params
    process = council(open_session(alice), **params)
    # then it fails at once, naming the field, and spawns no head
    assert (process.status, process.close_reason, process.last_error) == (
        Status.CLOSED,
        CloseReason.FAILED,
        error,
    )
    assert not ThinkProcess.objects.filter(parent=process).exists()


@pytest.mark.django_db(transaction=True)
def test_arthur_convenes_a_council_and_tells_the_person_its_report(alice, script):
    # given arthur, who starts a zaphod council for the person's question
    create_council = {"name": "process_create", "arguments": {"recipe": "zaphod", "goal": QUESTION}}
    script(
        [
            {
                "engine": "arthur",
                "match": "^Friday\\?$",
                "times": 1,
                "tool_calls": [create_council],
            },
            {"engine": "arthur", "match": "^Friday\\?$", "reply": "I asked the council."},
            {
                "engine": "arthur",
                "match": r"^\[report from tp_\d+ \(zaphod\): DONE\]\n## Consensus",
                "reply": "The council says: ship on Friday morning.",
            },
            *head_rules(),
            synthesize(),
        ]
    )
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1"),
        recipe="arthur",
    )
    # when the person asks
    steer.send_chat(session.pk, "Friday?")
    # then arthur tells the person what the council concluded
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    wait_until(lambda: "The council says: ship on Friday morning." in said(session, chat), 20)
    [zaphod] = ThinkProcess.objects.filter(parent=chat)
    assert (zaphod.think_engine, zaphod.close_reason) == ("zaphod", CloseReason.DONE)
    # and keeps the council's report for the person
    [kept] = InboxItem.objects.filter(kind="OUTPUT_TEXT")
    assert kept.body == zaphod.engine_state["report"]


@pytest.mark.django_db(transaction=True)
def test_the_council_script_of_docs_engines_md_drives_zaphod_as_the_page_says(
    alice, script, settings
):
    # given the zaphod script docs/engines.md shows, with the fallback model it names
    page = (Path(__file__).resolve().parents[2] / "docs" / "engines.md").read_text()
    marker = "# VANCETOPE_LLM_SCRIPT, with VANCETOPE_LLM_FALLBACK_MODEL=backup-model\n"
    block = page.split(marker, 1)[1].split("```", 1)[0]
    settings.VANCETOPE_LLM_FALLBACK_MODEL = "backup-model"
    script(yaml.safe_load(block))
    # when the council is asked
    done = at_rest(council(open_session(alice)).pk, Status.CLOSED)
    # then the skeptic failed on its provider, the others answered, and the fallback synthesized
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    by_name = heads(done)
    assert {name: head["status"] for name, head in by_name.items()} == {
        "skeptic": "FAILED",
        "optimist": "DONE",
        "pragmatist": "DONE",
    }
    assert by_name["skeptic"]["error"] == PROVIDER_DOWN
    assert done.engine_state["synthesis"]["model"] == "backup-model"
    assert done.engine_state["sections"]["conclusion"] == "Ship on Friday morning."
