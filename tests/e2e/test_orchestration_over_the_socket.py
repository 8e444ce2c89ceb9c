"""Orchestration as a person at a client sees it, over the real ASGI WebSocket stack: the
session chats with arthur (the default chat engine), which starts marvin; marvin's question
comes as an inbox item, the answer goes back over the socket, and a budget breach is told.

Scripted-provider scripts written from docs/engines.md: arthur `chat`, marvin `plan` (through
`plan_tasks`) and `aggregate`, and marvin's frankie workers (`act`, `report`). Rules that must
fire once say `times: 1`: a step run twice would get the echo instead, and the tree would show
it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from channels.db import database_sync_to_async

from processes.models import ThinkProcess
from processes.states import CloseReason
from tests.support.marvin import worker as worker_rules
from tests.support.ws import Client, bearer, connect, open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def plan(*tasks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "plan_tasks", "arguments": {"tasks": list(tasks)}}]


def deep_think(goal: str, **params: Any) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {"recipe": "deep-think", "goal": goal}
    if params:
        arguments["params"] = params
    return [{"name": "process_create", "arguments": arguments}]


async def said_by_assistant(client: Client, pattern: str) -> dict[str, Any]:
    """The first assistant chat-message (collected or to come) whose text matches."""
    while True:
        frame = await client.event("chat-message", role="assistant")
        if re.search(pattern, frame["data"]["text"]):
            return frame
        # Not this one: look at the ones after it.
        client.events.remove(frame)


@database_sync_to_async
def marvin_of(chat_process_id: str) -> ThinkProcess:
    return ThinkProcess.objects.get(
        parent_id=int(chat_process_id.removeprefix("tp_")), think_engine="marvin"
    )


@database_sync_to_async
def workers_of(process: ThinkProcess) -> list[ThinkProcess]:
    return list(ThinkProcess.objects.filter(parent=process).order_by("pk"))


async def test_a_question_of_marvin_is_answered_over_the_socket_and_nothing_before_it_reruns(
    alice, script
):
    # given arthur, marvin and its worker scripted; marvin's tree asks between two steps
    script(
        [
            {
                "engine": "arthur",
                "match": "^map the rings$",
                "times": 1,
                "tool_calls": deep_think("map the rings"),
            },
            {"engine": "arthur", "match": "^map the rings$", "reply": "I started a deep think."},
            {
                "engine": "arthur",
                "match": r"^\[report from tp_\d+ \(marvin\): DONE\]",
                "reply": "Here is the map: a blue ring chart.",
            },  # fmt: skip
            {
                "engine": "marvin",
                "step": "plan",
                "times": 1,
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Measure", "goal": "measure the rings"},
                    {"kind": "USER_INPUT", "title": "Colour", "goal": "Which colour?"},
                    {"kind": "AGGREGATE", "title": "Map"},
                ),
            },
            *worker_rules("measure the rings", "7 rings.", times=1),
            {
                "engine": "marvin",
                "step": "aggregate",
                "times": 1,
                "match": "7 rings[\\s\\S]*blue",
                "reply": "A blue chart of 7 rings.",
            },  # fmt: skip
        ]
    )
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    assert created["chatProcessId"]
    # when the person asks in the chat
    await client.request("chat", {"text": "map the rings"})
    await said_by_assistant(client, "^I started a deep think.$")
    # then marvin's question reaches them as a QUESTION item of the chat process, live
    posted = await client.event("inbox-item")
    item = posted["data"]["item"]
    assert (item["kind"], item["body"]) == ("QUESTION", "Which colour?")
    assert item["originProcessId"] == created["chatProcessId"]
    # and the tree grew as task-tree events, the worker done before the question
    trees = [f["data"]["tree"] for f in client.events if f.get("event") == "task-tree"]
    asked = trees[-1]["nodes"]
    assert [n["status"] for n in asked] == ["DONE", "DONE", "BLOCKED", "PENDING"]
    # when they answer over the socket
    answered = await client.request(
        "inbox-answer", {"itemId": item["id"], "answer": {"text": "blue"}}
    )
    assert answered["type"] == "inbox-answered", answered
    assert answered["data"]["delivered"] is True
    # then marvin continues from the question and arthur tells them the result
    await said_by_assistant(client, "^Here is the map: a blue ring chart.$")
    marvin = await marvin_of(created["chatProcessId"])
    assert marvin.close_reason == CloseReason.DONE
    assert marvin.engine_state["report"] == "A blue chart of 7 rings."
    nodes = marvin.engine_state["taskTree"]["nodes"]
    assert [n["status"] for n in nodes] == ["DONE"] * 4
    assert nodes[2]["result"] == "blue"
    # and nothing before the question ran twice: one plan, one worker that answered once
    [worker] = await workers_of(marvin)
    assert worker.public_id == nodes[1]["processId"]
    assert worker.close_reason == CloseReason.DONE
    await client.ws.disconnect()


async def test_a_plan_of_five_under_max_children_three_fails_marvin_and_arthur_says_why(
    alice, script
):
    # given a deep think allowed three processes, whose plan has five workers
    script(
        [
            {
                "engine": "arthur",
                "match": "^survey the moons$",
                "times": 1,
                "tool_calls": deep_think("survey the moons", maxChildren=3),
            },
            {"engine": "arthur", "match": "^survey the moons$", "reply": "Started."},
            # arthur's LLM reads the failure with the budget named, and tells the person
            {
                "engine": "arthur",
                "match": r"^\[report from tp_\d+ \(marvin\): FAILED\][\s\S]*maxChildren",
                "reply": "The survey stopped: it may start only 3 workers.",
            },  # fmt: skip
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    *(
                        {"kind": "WORKER", "title": f"Moon {n}", "goal": f"moon {n}"}
                        for n in range(5)
                    )
                ),
            },
            {"engine": "frankie", "reply": "surveyed."},
        ]
    )
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    # when the person asks
    await client.request("chat", {"text": "survey the moons"})
    # then marvin fails naming the budget after its third worker, and arthur tells them
    await said_by_assistant(client, "^The survey stopped: it may start only 3 workers.$")
    marvin = await marvin_of(created["chatProcessId"])
    assert marvin.close_reason == CloseReason.FAILED
    assert "budget maxChildren exceeded" in marvin.last_error
    assert len(await workers_of(marvin)) == 3
    await client.ws.disconnect()
