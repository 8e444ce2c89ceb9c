"""What a client gets when it names no recipe: arthur as a person's chat, ford as a system
session's chat (`session.defaultChatEngine`), and deep thinking (marvin's `deep-think`) for a
process it creates without naming a recipe or an engine."""

from __future__ import annotations

import pytest

from processes.actions.create import create_process
from processes.models import ThinkProcess
from tests.support.marvin import result
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def chat_of(session) -> ThinkProcess:
    return ThinkProcess.objects.get(pk=session.chat_process_id)


def test_a_persons_session_chats_with_arthur_and_a_system_session_with_ford(alice):
    # when
    person = open_session(alice, "cli")
    web = open_session(alice, "web")
    system = open_session(alice, "cron", system=True)
    # then
    assert (chat_of(person).think_engine, chat_of(person).recipe_name) == ("arthur", "arthur")
    assert chat_of(web).think_engine == "arthur"
    assert (chat_of(system).think_engine, chat_of(system).recipe_name) == ("ford", "ford")


def test_the_default_chat_engine_is_a_setting(alice, settings):
    # given
    settings.VANCETOPE_SESSION_DEFAULT_CHAT_ENGINE = "ford"
    # when
    session = open_session(alice)
    # then
    assert chat_of(session).think_engine == "ford"


def test_a_process_created_without_recipe_or_engine_thinks_deeply(alice, script):
    # given: marvin's plan step answers with one worker task
    script(
        [
            {
                "step": "plan",
                "tool_calls": [
                    {
                        "name": "plan_tasks",
                        "arguments": {"tasks": [{"kind": "WORKER", "title": "Look"}]},
                    }
                ],
            },
            {
                "recipe": "marvin-worker",
                "step": "report",
                "tool_calls": [{"name": "report_result", "arguments": result("looked")}],
            },
            {"recipe": "marvin-worker", "reply": "looked"},
            {"step": "aggregate", "reply": "## Report\nlooked"},
        ]
    )
    session = open_session(alice)
    # when
    process = create_process(session, goal="why is the sky blue?")
    # then
    assert (process.recipe_name, process.think_engine) == ("deep-think", "marvin")
    wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).status == "CLOSED", timeout=20)
    done = ThinkProcess.objects.get(pk=process.pk)
    assert done.close_reason == "DONE"
    assert done.engine_state["report"] == "## Report\nlooked"


def test_an_engine_named_alone_still_picks_its_own_recipe(alice):
    session = open_session(alice)
    # when
    process = create_process(session, goal="hi", engine="ford", start=False)
    # then
    assert process.recipe_name == "ford"


def test_on_the_bare_offline_default_a_deep_think_with_a_worker_closes_done(alice):
    # given no script at all: the echo, which before could not call a structured step's
    # forced tool (the worker failed without report_result; marvin without replan_tasks)
    session = open_session(alice)
    # when a deep think is created
    process = create_process(session, goal="why is the sky blue?")
    # then it plans, runs its worker and closes DONE, with a report
    assert wait_until(
        lambda: ThinkProcess.objects.get(pk=process.pk).status == "CLOSED", timeout=30
    )
    done = ThinkProcess.objects.get(pk=process.pk)
    assert done.close_reason == "DONE", done.last_error
    workers = ThinkProcess.objects.filter(root_id=process.pk)
    assert workers.exists()
    assert set(workers.values_list("close_reason", flat=True)) == {"DONE"}
    assert done.engine_state["report"]
