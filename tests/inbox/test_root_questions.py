"""A question of a process nobody's arthur started reaches the inbox.

A process created over REST (or `vance create`, MCP `process_create`) is a root: no parent
reads its BLOCKED report. Before, its question stayed in its summary and no inbox item
appeared. Now the Brain posts the item in the parent's place (inbox/asking.py), for the owner
of the process's session, and the answer reaches the process as a steer, once.
"""

from __future__ import annotations

import pytest

from inbox.asking import ask_for_root
from inbox.models import InboxItem
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from tests.support.marvin import nodes
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import settled, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Which colour for the chart?"


def test_a_deep_thinks_question_over_rest_is_an_item_whose_answer_goes_on_once(
    alice: Tenancy, bob: Tenancy, script
) -> None:
    # given a deep think created over REST whose plan asks the person, then reports
    script([{"engine": "marvin", "step": "aggregate", "reply": "Report: in blue."}])
    session = open_session(alice)
    tasks = [
        {"kind": "USER_INPUT", "title": "Colour", "goal": QUESTION},
        {"kind": "AGGREGATE", "title": "Report"},
    ]
    body = {
        "session": session.public_id,
        "recipe": "deep-think",
        "goal": "chart Saturn's rings",
        "params": {"tasks": tasks},
    }
    created = alice.api().post("/api/processes", body, format="json")
    assert created.status_code == 201, created.json()
    pk = int(created.json()["id"].removeprefix("tp_"))
    # when it blocks on the question
    settled(pk, Status.BLOCKED)
    # then its person finds it in the inbox (and only she does)
    assert wait_until(lambda: alice.api().get("/api/inbox").json()["count"] == 1)
    [item] = alice.api().get("/api/inbox").json()["results"]
    assert (item["kind"], item["status"], item["body"]) == ("QUESTION", "OPEN", QUESTION)
    assert item["originProcessId"] == f"tp_{pk}"
    assert bob.api().get("/api/inbox").json()["count"] == 0
    # when she answers it
    answered = alice.api().post(
        f"/api/inbox/{item['id']}/answer", {"answer": {"text": "blue"}}, format="json"
    )
    assert answered.status_code == 200, answered.json()
    # then the deep think goes on from the question and closes DONE with the answer in its tree
    done = settled(pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE
    asked = [node for node in nodes(done) if node["kind"] == "USER_INPUT"]
    assert [(node["status"], node["result"]) for node in asked] == [("DONE", "blue")]
    # and a second answer changes nothing: a 409
    again = alice.api().post(
        f"/api/inbox/{item['id']}/answer", {"answer": {"text": "red"}}, format="json"
    )
    assert again.status_code == 409
    assert InboxItem.objects.get(pk=int(item["id"].removeprefix("inb_"))).answer == {"text": "blue"}


def test_a_nested_process_still_asks_its_parent_and_a_root_asks_once(alice: Tenancy) -> None:
    # given a deep think blocked on a question, and the same question nested under a chat
    from processes.actions.create import create_process

    session = open_session(alice)
    tasks = [{"kind": "USER_INPUT", "title": "Colour", "goal": QUESTION}]
    root = create_process(session, goal="chart", recipe="deep-think", params={"tasks": tasks})
    settled(root.pk, Status.BLOCKED)
    assert wait_until(lambda: InboxItem.objects.filter(origin_process_id=root.pk).count() == 1)
    # when the Brain hears of the same block again (a resume, a recovery)
    assert ask_for_root(ThinkProcess.objects.get(pk=root.pk)) is None
    # then no second item; and a child's question is not asked in its parent's place
    assert InboxItem.objects.filter(origin_process_id=root.pk).count() == 1
    assert session.chat_process_id is not None
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    child = create_process(
        session, goal="chart", recipe="deep-think", params={"tasks": tasks}, parent=chat
    )
    settled(child.pk, Status.BLOCKED)
    assert ask_for_root(ThinkProcess.objects.get(pk=child.pk)) is None
    assert not InboxItem.objects.filter(origin_process_id=child.pk, answer_as_steer=True).exists()
