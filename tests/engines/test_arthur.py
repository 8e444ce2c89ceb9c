"""arthur: the session chat that starts workers, tells the person what they report, and passes
a worker's question to the person and the answer back (scripts from docs/engines.md)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from inbox.models import InboxItem
from inbox.services import do_answer, filtered_items
from processes.actions import steer
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import SessionEvent
from sessions_app.services import FingerprintData
from tests.support.arthur import arthur_session, said
from tests.support.marvin import worker
from tests.support.tools import project_recipe
from tests.support.waiting import wait_until


def create_marvin(goal: str) -> dict[str, Any]:
    arguments = {"recipe": "deep-think", "goal": goal}
    return {"name": "process_create", "arguments": arguments}


@pytest.mark.django_db(transaction=True)
def test_arthur_starts_marvin_whose_two_workers_report_and_tells_the_person(alice, script):
    # given scripts for arthur's chat, marvin's plan and aggregate, and the workers
    script(
        [
            {
                "engine": "arthur",
                "match": "^study Saturn$",
                "times": 1,
                "tool_calls": [create_marvin("study Saturn")],
            },
            {"engine": "arthur", "match": "^study Saturn$", "reply": "I started a deep think."},
            {
                "engine": "arthur",
                "match": r"^\[report from tp_\d+ \(marvin\): DONE\]",
                "reply": "Marvin's report: Saturn has 95 moons and 7 rings.",
            },
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": [
                    {
                        "name": "plan_tasks",
                        "arguments": {
                            "tasks": [
                                {"kind": "WORKER", "title": "Moons", "goal": "count the moons"},
                                {"kind": "WORKER", "title": "Rings", "goal": "count the rings"},
                                {"kind": "AGGREGATE", "title": "Report"},
                            ]
                        },
                    }
                ],
            },
            *worker("count the moons", "95 moons."),
            *worker("count the rings", "7 rings."),
            {"engine": "marvin", "step": "aggregate", "reply": "Saturn: 95 moons, 7 rings."},
        ]
    )
    session = arthur_session(alice)
    # when the person asks
    steer.send_chat(session.pk, "study Saturn")
    # then arthur answers at once, and later tells the person what marvin found
    wait_until(lambda: "I started a deep think." in said(session, "assistant"))
    wait_until(
        lambda: "Marvin's report: Saturn has 95 moons and 7 rings." in said(session, "assistant"),
        timeout=20,
    )
    [marvin] = ThinkProcess.objects.filter(parent_id=session.chat_process_id)
    assert (marvin.think_engine, marvin.recipe_name) == ("marvin", "deep-think")
    assert (marvin.status, marvin.close_reason) == (Status.CLOSED, CloseReason.DONE)
    assert ThinkProcess.objects.filter(parent=marvin, close_reason=CloseReason.DONE).count() == 2
    # the client saw marvin's task tree grow
    trees = SessionEvent.objects.filter(session_id=session.pk, event="task-tree")
    assert max(len(e.data["tree"]["nodes"]) for e in trees) == 4
    # and the report is kept as an OUTPUT_TEXT inbox item for the person
    [kept] = InboxItem.objects.filter(kind="OUTPUT_TEXT")
    assert (kept.title, kept.body) == (
        f"Result of {marvin.public_id}",
        "Saturn: 95 moons, 7 rings.",
    )
    assert kept.origin_process_id == session.chat_process_id
    # and arthur stays open
    assert ThinkProcess.objects.get(pk=session.chat_process_id).status == Status.IDLE


@pytest.mark.django_db(transaction=True)
def test_a_workers_question_becomes_an_inbox_question_whose_answer_goes_back_to_it(alice, script):
    # given marvin started by arthur with a question in its tasks
    script(
        [
            {
                "engine": "arthur",
                "match": "^chart the rings$",
                "times": 1,
                "tool_calls": [
                    {
                        "name": "process_create",
                        "arguments": {
                            "recipe": "deep-think",
                            "goal": "chart the rings",
                            "params": {
                                "tasks": [
                                    {
                                        "kind": "USER_INPUT",
                                        "title": "Colour",
                                        "goal": "Which colour?",
                                    },
                                    {"kind": "AGGREGATE", "title": "Report"},
                                ]
                            },
                        },
                    }
                ],
            },
            {"engine": "arthur", "match": "^chart the rings$", "reply": "On it."},
            {"engine": "arthur", "match": r"^\[report from", "reply": "Done: a blue chart."},
            {"engine": "marvin", "step": "aggregate", "reply": "A blue chart."},
        ]
    )
    session = arthur_session(alice)
    steer.send_chat(session.pk, "chart the rings")
    # when marvin blocks on its question, arthur posts it as a QUESTION item and says so
    item = wait_until(lambda: InboxItem.objects.filter(kind="QUESTION").first())
    [marvin] = ThinkProcess.objects.filter(parent_id=session.chat_process_id)
    assert (item.body, item.origin_process_id) == ("Which colour?", session.chat_process_id)
    # and it names marvin as the one that asked: the item is found by marvin's id, and marvin's
    # page lists it, posted for it by arthur (before: "from tp_1", and marvin's page said it
    # posted nothing)
    assert item.asked_by == marvin.public_id
    assert [i.pk for i in filtered_items(alice.user, process=marvin.public_id)] == [item.pk]
    browser = Client()
    browser.force_login(alice.user)
    page = browser.get(f"/processes/{marvin.public_id}").content.decode()
    assert f'posted for it by <a href="/processes/tp_{session.chat_process_id}"' in page
    inbox = browser.get("/inbox/").content.decode()
    assert f'from <a href="/processes/{marvin.public_id}">{marvin.public_id}</a>, through' in inbox
    wait_until(lambda: any(item.public_id in text for text in said(session, "assistant")))
    # and the person's answer goes back to marvin, which finishes, and arthur says so
    answered = do_answer(alice.user, item.public_id, {"text": "blue"})
    assert answered.delivered
    wait_until(lambda: "Done: a blue chart." in said(session, "assistant"), timeout=20)
    done = ThinkProcess.objects.get(pk=marvin.pk)
    assert done.close_reason == CloseReason.DONE
    assert done.engine_state["taskTree"]["nodes"][1]["result"] == "blue"


@pytest.mark.django_db(transaction=True)
def test_without_the_inbox_a_workers_question_is_asked_in_the_chat(alice, script):
    # given an arthur recipe without inbox_post, and marvin started with a question
    project_recipe(alice, "arthur-plain", engine="arthur", allowed_tools_remove=["inbox_post"])
    script(
        [
            {
                "engine": "arthur",
                "match": "^ask me$",
                "times": 1,
                "tool_calls": [
                    {
                        "name": "process_create",
                        "arguments": {
                            "recipe": "deep-think",
                            "goal": "ask me",
                            "params": {
                                "tasks": [{"kind": "USER_INPUT", "title": "Q", "goal": "Why?"}]
                            },
                        },
                    }
                ],
            },
            {"engine": "arthur", "match": "^ask me$", "reply": "Asking."},
            {"engine": "arthur", "match": r"^\[report from", "reply": "It is done."},
        ]
    )
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1"),
        recipe="arthur-plain",
    )
    steer.send_chat(session.pk, "ask me")
    # then the question is asked in the chat, and the person's next message answers it
    wait_until(lambda: any(t.endswith("asks: Why?") for t in said(session, "assistant")))
    steer.send_chat(session.pk, "because")
    wait_until(lambda: "It is done." in said(session, "assistant"), timeout=20)
    [marvin] = ThinkProcess.objects.filter(parent_id=session.chat_process_id)
    assert marvin.engine_state["taskTree"]["nodes"][1]["result"] == "because"
    assert not InboxItem.objects.exists()
