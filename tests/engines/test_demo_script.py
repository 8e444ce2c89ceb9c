"""The demo script (VANCETOPE_LLM_SCRIPT=demo, docs/demo.md): a newcomer's chat reaches each
engine with no model and no YAML of their own: a deep think whose question lands in the inbox,
a council, a vogon strategy with an approval, a thinking space's first branches."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.management.commands.brain import demo_hint
from inbox.models import InboxItem
from inbox.services import do_answer
from processes.actions import steer
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData
from spaces import requests as space_requests
from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until
from vancetope.llm.factory import describe_provider, reset_provider_cache


@pytest.fixture
def demo(settings: Any) -> None:
    settings.VANCETOPE_LLM = "scripted"
    settings.VANCETOPE_LLM_SCRIPT = "demo"
    reset_provider_cache()


def chat_session(tenancy: Tenancy) -> Session:
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
    )


def said(session: Session) -> list[str]:
    events = SessionEvent.objects.filter(session_id=session.pk, event="chat-message")
    return [e.data["text"] for e in events.order_by("seq") if e.data["role"] == "assistant"]


def worker_of(session: Session, recipe: str) -> ThinkProcess:
    found = wait_until(
        lambda: ThinkProcess.objects.filter(
            parent_id=session.chat_process_id, recipe_name=recipe
        ).first()
    )
    assert found is not None
    return found


def closed(process: ThinkProcess, timeout: float = 30) -> ThinkProcess:
    found = wait_until(
        lambda: ThinkProcess.objects.filter(pk=process.pk, status=Status.CLOSED).first(),
        timeout=timeout,
    )
    assert found is not None
    return found


def open_item(kind: str) -> InboxItem:
    found = wait_until(lambda: InboxItem.objects.filter(kind=kind, status="OPEN").first(), 30)
    assert found is not None
    return found


def test_demo_names_the_bundled_script_and_the_banner_line(demo):
    assert (
        describe_provider() == "LLM: scripted with the demo script (docs/demo.md) (offline; "
        "set VANCETOPE_LLM=local|openai|anthropic to use a real model)"
    )


def test_the_banner_offers_the_demo_on_the_offline_default_and_says_what_to_type_in_it(
    settings: Any,
):
    settings.VANCETOPE_LLM = "scripted"
    settings.VANCETOPE_LLM_SCRIPT = ""
    reset_provider_cache()
    assert demo_hint() == [
        "  demo: VANCETOPE_LLM_SCRIPT=demo shows every engine without a model (docs/demo.md)"
    ]
    settings.VANCETOPE_LLM_SCRIPT = "demo"
    reset_provider_cache()
    [line] = demo_hint()
    assert "`deep think`, `council` or `strategy`" in line
    assert "/space start" in line


@pytest.mark.django_db(transaction=True)
def test_demo_deep_think_asks_in_the_inbox_and_reaches_done(alice, demo):
    # given a chat
    session = chat_session(alice)
    # when the person asks for a deep think
    steer.send_chat(session.pk, "show me a deep think")
    # then arthur starts marvin and says so once, without looping on its tool call
    marvin = worker_of(session, "deep-think")
    wait_until(lambda: any("I started a deep think" in text for text in said(session)))
    assert ThinkProcess.objects.filter(parent_id=session.chat_process_id).count() == 1
    # and marvin's question lands in the inbox
    question = open_item("QUESTION")
    assert "budget per person" in question.body
    # when the person answers it
    assert do_answer(alice.user, question.public_id, {"text": "800 euros"}).delivered
    # then the deep think finishes DONE with its plan, and arthur tells the person
    done = closed(marvin)
    assert done.close_reason == CloseReason.DONE
    assert "Lisbon offsite: the plan" in done.engine_state["taskTree"]["nodes"][-1]["result"]
    wait_until(lambda: any("The deep think is done" in text for text in said(session)), 20)
    assert InboxItem.objects.filter(kind="OUTPUT_TEXT").exists()


@pytest.mark.django_db(transaction=True)
def test_demo_council_runs_three_heads_and_synthesizes(alice, demo):
    session = chat_session(alice)
    steer.send_chat(session.pk, "ask a council")
    zaphod = closed(worker_of(session, "zaphod"))
    assert zaphod.close_reason == CloseReason.DONE, zaphod.last_error
    heads = zaphod.engine_state["heads"]
    assert [(h["name"], h["status"]) for h in heads] == [
        ("skeptic", "DONE"),
        ("optimist", "DONE"),
        ("pragmatist", "DONE"),
    ]
    assert "three-month trial" in zaphod.engine_state["report"]
    wait_until(lambda: any("The council agrees" in text for text in said(session)), 20)


@pytest.mark.django_db(transaction=True)
def test_demo_strategy_passes_its_gate_and_finishes_once_approved(alice, demo):
    session = chat_session(alice)
    steer.send_chat(session.pk, "run a strategy")
    vogon = worker_of(session, "vogon")
    # the last phase asks for the person's approval through arthur's inbox
    approval = open_item("APPROVAL")
    assert "Ship the final version?" in approval.body
    assert do_answer(alice.user, approval.public_id, {"decision": "approve"}).delivered
    done = closed(vogon)
    assert done.close_reason == CloseReason.DONE, done.last_error
    phases = done.engine_params["strategyState"]["phases"]
    assert [p["status"] for p in phases] == ["DONE", "DONE", "DONE", "DONE"]
    assert phases[2]["output"]["verdict"] == "pass"
    wait_until(lambda: any("The strategy is done" in text for text in said(session)), 20)


@pytest.mark.django_db(transaction=True)
def test_demo_thinking_space_gets_its_first_branches(alice, demo):
    session = chat_session(alice)
    steer.send_chat(session.pk, "hello")
    wait_until(lambda: any("demo script" in text for text in said(session)))
    # when the person starts a thinking space (what `/space start` sends)
    space_requests.suggest(alice.user, session.pk)

    # then the agent's forced thinking_suggest gives the root three branches
    def branches() -> list[str]:
        space = space_requests.get_space(
            alice.user, space_id=None, node_id=None, session_id=session.pk
        )
        return [n["title"] for n in space["nodes"] if n["parentId"] is not None]

    assert wait_until(branches, 20) == ["Venue and dates", "Agenda", "Budget"]
