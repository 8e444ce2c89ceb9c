"""Whether a process is a chat or a worker is its params' (its recipe's), not its engine's: no
engine asks whether it is its session's chat process. A session's chat process gets
`finishAfterGoal: false, reportTo: user` beneath its recipe's params; a recipe that says
otherwise wins, in either direction."""

from __future__ import annotations

import pytest

from processes.actions import steer
from processes.actions.create import create_process
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy
from tests.support.tools import project_recipe
from tests.support.waiting import closed_process, wait_until


def open_session(tenancy: Tenancy, recipe: str) -> Session:
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe=recipe,
    )


def answers(session: Session) -> list[str]:
    events = SessionEvent.objects.filter(session_id=session.pk, event="chat-message")
    return [e.data["text"] for e in events.order_by("seq") if e.data["role"] == "assistant"]


@pytest.mark.django_db(transaction=True)
def test_a_frankie_chat_process_whose_recipe_finishes_after_its_goal_closes_done(alice, script):
    # given a frankie recipe with a worker's param, as a session's chat recipe
    project_recipe(alice, "frankie-once", params={"finishAfterGoal": True})
    script([{"engine": "frankie", "match": "^sum 2 and 3$", "reply": "5"}])
    session = open_session(alice, "frankie-once")
    # when the person asks once
    steer.send_chat(session.pk, "sum 2 and 3")
    # then the chat process answers and closes DONE, as a worker does
    done = closed_process(session.chat_process_id)
    assert done.close_reason == CloseReason.DONE
    assert done.engine_state["result"] == "5"
    assert answers(session) == ["5"]


@pytest.mark.django_db(transaction=True)
def test_a_frankie_chat_process_of_an_ordinary_recipe_stays_open_after_answering(alice, script):
    # given the bundled frankie recipe (no role params) as a session's chat recipe
    script([{"engine": "frankie", "match": "^sum 2 and 3$", "reply": "5"}])
    session = open_session(alice, "frankie")
    # when the person asks
    steer.send_chat(session.pk, "sum 2 and 3")
    # then it answers and stays open for the next message
    wait_until(lambda: answers(session) == ["5"])
    chat = wait_until(
        lambda: ThinkProcess.objects.filter(pk=session.chat_process_id, status=Status.IDLE).first()
    )
    assert chat.close_reason in ("", None)


@pytest.mark.django_db(transaction=True)
def test_an_arthur_worker_with_the_chat_params_stays_open_and_asks_in_the_chat(alice, script):
    # given an arthur worker (not a chat process) made with the chat role's params, no inbox
    project_recipe(
        alice,
        "arthur-talker",
        engine="arthur",
        allowed_tools_remove=["inbox_post"],
        params={"finishAfterGoal": False, "reportTo": "user"},
    )
    script(
        [
            {
                "engine": "arthur",
                "match": "^plan a trip$",
                "times": 1,
                "tool_calls": [
                    {
                        "name": "process_create",
                        "arguments": {
                            "recipe": "deep-think",
                            "goal": "plan a trip",
                            "params": {
                                "tasks": [{"kind": "USER_INPUT", "title": "Q", "goal": "Where?"}]
                            },
                        },
                    }
                ],
            },
            {"engine": "arthur", "match": "^plan a trip$", "reply": "Planning."},
        ]
    )
    session = open_session(alice, "ford")
    worker = create_process(session, goal="plan a trip", recipe="arthur-talker")
    # when it answers its goal and its marvin asks a question
    wait_until(lambda: "Planning." in answers(session))
    wait_until(lambda: any(t.endswith("asks: Where?") for t in answers(session)))
    # then the question is said in the chat (not passed up by blocking), and the worker stays
    # open after answering, as a session's chat does
    found = ThinkProcess.objects.get(pk=worker.pk)
    assert found.status == Status.IDLE
    assert found.engine_state["asking"].startswith("tp_")
    assert "asked" not in found.engine_state
