"""Every engine once with a real model, as a client sees it over the real ASGI WebSocket stack:
the Brain thinks through the `openai` provider with llama.cpp's own server (conftest.py).
Structure and lifecycle only: events, statuses, task trees, schemas; never the model's words."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jsonschema
import pytest
from channels.db import database_sync_to_async

from engines.builtin.zaphod import synthesis_schema
from processes.models import ConversationMessage, ThinkProcess
from tests.support.marvin import running_intervals
from tests.support.ws import FINGERPRINT, Client, bearer, connect, open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

# Seconds to wait for one event or one process: calls of a few seconds each, in a row.
PATIENCE = 420


async def next_event(client: Client, name: str, **match: Any) -> dict[str, Any]:
    """The first event `name` whose data contains `match`, collected or still to come, waiting
    as long as a real model may take (the consumer tests' helper waits 10 s)."""
    deadline = time.monotonic() + PATIENCE
    seen = 0
    while True:
        for frame in client.events[seen:]:
            if frame["event"] == name and match.items() <= frame["data"].items():
                return frame
        seen = len(client.events)
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"no {name} event with {match} within {PATIENCE}s")
        # One wait for all that is left: asgiref's communicator cancels the application (the
        # socket) when a receive times out, so a timeout cannot be retried.
        frame = json.loads(await client.ws.receive_from(timeout=left))
        if frame.get("type") == "event":
            client.events.append(frame)


@database_sync_to_async
def row(public_id: str) -> ThinkProcess:
    return ThinkProcess.objects.get(pk=int(public_id.removeprefix("tp_")))


async def settled(public_id: str, *statuses: str) -> ThinkProcess:
    """The process once its status is one of `statuses` and no lane holds it."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        process = await row(public_id)
        if process.status in statuses and not process.lease_owner:
            return process
        await asyncio.sleep(0.2)
    process = await row(public_id)
    pytest.fail(f"{public_id} is {process.status} ({process.last_error!r}), not {statuses}")


async def create(client: Client, recipe: str, goal: str, **params: Any) -> str:
    data: dict[str, Any] = {"recipe": recipe, "goal": goal}
    if params:
        data["params"] = params
    reply = await client.request("process-create", data)
    assert reply["type"] == "process-created", reply
    return str(reply["data"]["process"]["id"])


async def test_ford_streams_a_reply_in_several_deltas_with_estimated_usage(alice, real_server):
    # given a session whose chat is ford
    client = await connect(bearer(alice))
    created = await open_session(client, alice, recipe="ford")
    chat = created["chatProcessId"]
    # when the person asks
    await client.request("chat", {"text": "Tell me about the Moon in a few sentences."})
    reply = await next_event(client, "chat-message", role="assistant", processId=chat)
    # then the reply streamed in at least three deltas that join to the stored message
    deltas = [e["data"]["text"] for e in client.events if e["event"] == "chat-delta"]
    assert len(deltas) >= 3
    assert "".join(deltas) == reply["data"]["text"]
    assert reply["data"]["text"].strip()
    # and the usage the server did not report was counted, marked estimated
    await settled(chat, "IDLE")
    shown = await client.request("process-get", {"processId": chat})
    usage = shown["data"]["process"]["usage"]
    assert usage["estimated"] is True
    assert usage["promptTokens"] > 0
    assert usage["completionTokens"] > 0
    await client.ws.disconnect()


async def test_arthur_answers_the_default_chat(alice, real_server):
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    chat = created["chatProcessId"]
    assert (await row(chat)).think_engine == "arthur"
    await client.request("chat", {"text": "Hello! What can you do for me?"})
    reply = await next_event(client, "chat-message", role="assistant", processId=chat)
    assert reply["data"]["text"].strip()
    process = await settled(chat, "IDLE")
    assert process.llm_calls >= 1
    await client.ws.disconnect()


async def test_a_deep_think_closes_done_with_a_worker_and_its_aggregate(alice, real_server):
    # given
    client = await connect(bearer(alice))
    await open_session(client, alice)
    # when a person starts a deep think
    # (with the defaults: the Brain offers SmolLM2 marvin's minimal plan, a small model's)
    marvin = await create(client, "deep-think", "Compare Mars and Venus.")
    # then it plans (a forced plan_tasks), runs its workers and aggregates; a question the
    # plan asks of the person is answered
    while True:
        process = await settled(marvin, "CLOSED", "BLOCKED")
        if process.status == "CLOSED":
            break
        assert process.engine_state["taskTree"], process.last_error
        await client.request("process-steer", {"processId": marvin, "message": "Keep it short."})
        await asyncio.sleep(0.5)
    assert process.close_reason == "DONE", process.last_error
    shown = await client.request("process-get", {"processId": marvin})
    nodes = shown["data"]["process"]["taskTree"]["nodes"]
    assert any(n["kind"] == "WORKER" and n["status"] == "DONE" for n in nodes), nodes
    assert [n["status"] for n in nodes if n["kind"] == "AGGREGATE"][-1] == "DONE"
    assert process.engine_state["report"].strip()
    await client.ws.disconnect()


async def test_a_deep_think_runs_two_workers_at_once_and_aggregates(alice, real_server):
    # given a deep think given its plan: two independent workers, each asked for a one-field
    # result (a task's own outputSchema), and the report
    client = await connect(bearer(alice))
    await open_session(client, alice)
    fact = {
        "type": "object",
        "properties": {"summary": {"type": "string", "minLength": 1, "maxLength": 300}},
        "required": ["summary"],
    }
    tasks = [
        {"kind": "WORKER", "title": "Mars", "goal": "One fact about Mars.", "outputSchema": fact},
        {"kind": "WORKER", "title": "Venus", "goal": "One fact about Venus.", "outputSchema": fact},
        {"kind": "AGGREGATE", "title": "Report"},
    ]
    # when it runs on the real model
    marvin = await create(client, "deep-think", "Mars and Venus.", tasks=tasks)
    process = await settled(marvin, "CLOSED", "BLOCKED")
    # then the tree is done: both workers ran (a worker whose report the model got wrong
    # failed its node and was re-planned), and the report was written
    nodes = process.engine_state["taskTree"]["nodes"]
    summary = [(n["id"], n["kind"], n["status"], n.get("error")) for n in nodes]
    assert (process.status, process.close_reason) == ("CLOSED", "DONE"), (
        process.last_error,
        summary,
    )
    assert [n["status"] for n in nodes if n["kind"] == "AGGREGATE"][-1] == "DONE", summary
    assert all(n["status"] in {"DONE", "FAILED"} for n in nodes[1:3]), summary
    done = [n for n in nodes if n["kind"] == "WORKER" and n["status"] == "DONE"]
    assert done, summary
    assert all(isinstance(n["result"], dict) and n["result"]["summary"] for n in done), summary
    if any(n["status"] == "FAILED" for n in nodes[1:3]):
        assert any(n.get("replanOf") for n in nodes), summary
    # and the two planned workers ran at once
    workers = [int(str(n["processId"]).removeprefix("tp_")) for n in nodes[1:3]]
    intervals = await database_sync_to_async(running_intervals)(workers)
    assert max(start for start, _ in intervals) < min(end for _, end in intervals)
    await client.ws.disconnect()


async def test_a_bundled_vogon_strategy_goes_through_its_gate(alice, real_server):
    # given
    client = await connect(bearer(alice))
    await open_session(client, alice)
    # when vogon runs draft-review-ship (research, draft, review with a gate, ship)
    vogon = await create(client, "vogon", "A short note on tea.", strategy="draft-review-ship")
    process = await settled(vogon, "CLOSED", "BLOCKED")
    state = process.engine_params["strategyState"]
    review = next(phase for phase in state["phases"] if phase["name"] == "review")
    # then the reviewer's structured output (a forced report_result) fits the phase's schema
    schema = process.engine_params["strategy"]["phases"][2]["output"]
    jsonschema.validate(review["output"], schema)
    # and the gate judged it
    assert review["gate"]["passed"] in (True, False)
    if not review["gate"]["passed"]:
        # a failed gate ends the strategy FAILED, naming the condition
        assert (process.status, process.close_reason) == ("CLOSED", "FAILED")
        assert process.last_error.startswith("phase review: gate failed at phases[2].gate")
        return
    # a passed gate leads to the ship phase's checkpoint: the approval is asked, then given
    assert process.status == "BLOCKED"
    ship = state["phases"][3]
    assert ship["status"] == "APPROVAL"
    await client.request("process-steer", {"processId": vogon, "message": "approve"})
    process = await settled(vogon, "CLOSED")
    assert process.close_reason == "DONE"
    phases = process.engine_params["strategyState"]["phases"]
    assert [phase["status"] for phase in phases] == ["DONE"] * 4
    await client.ws.disconnect()


async def test_a_zaphod_council_closes_done_with_all_four_synthesis_fields(alice, real_server):
    client = await connect(bearer(alice))
    await open_session(client, alice)
    zaphod = await create(client, "zaphod", "Should we ship on a Friday?")
    process = await settled(zaphod, "CLOSED")
    assert process.close_reason == "DONE", process.last_error
    heads = process.engine_state["heads"]
    assert [head["status"] for head in heads] == ["DONE"] * 3
    sections = process.engine_state["sections"]
    jsonschema.validate(sections, synthesis_schema([h["name"] for h in heads]).parameters)
    assert set(sections) == {"consensus", "differences", "conclusion", "minorityReport"}
    report = await next_event(client, "chat-message", role="assistant", processId=zaphod)
    for title in ("## Consensus", "## Differences", "## Conclusion", "## Minority report"):
        assert title in report["data"]["text"]
    await client.ws.disconnect()


@database_sync_to_async
def notices_of(process: ThinkProcess) -> list[str]:
    """The space's notices in a process's conversation (`[thinking: node_N returned] …`)."""
    rows = ConversationMessage.objects.filter(process=process, content__startswith="[thinking: ")
    return list(rows.values_list("content", flat=True))


async def reply_to(client: Client, request_id: str) -> dict[str, Any]:
    """The reply to a request sent before, waiting as long as a control turn may take."""
    deadline = time.monotonic() + PATIENCE
    while True:
        # One wait for all that is left (see next_event).
        left = max(deadline - time.monotonic(), 0.01)
        frame = json.loads(await client.ws.receive_from(timeout=left))
        if frame.get("type") == "event":
            client.events.append(frame)
        elif frame.get("replyTo") == request_id:
            return dict(frame)


async def ask_to_return(client: Client, node_id: str) -> dict[str, Any]:
    """The reply to a space-return of the node (it comes when the control turn is over)."""
    client.counter += 1
    request_id = f"c{client.counter}"
    frame = {"type": "space-return", "id": request_id, "data": {"nodeId": node_id}}
    await client.ws.send_to(text_data=json.dumps(frame))
    return await reply_to(client, request_id)


async def test_a_thinking_space_suggests_a_branch_that_returns_to_its_parent(alice, real_server):
    # given a person's session with arthur
    root_client = await connect(bearer(alice))
    created = await open_session(root_client, alice)
    root_chat = created["chatProcessId"]
    # when the person asks for a thinking space's first branches
    started = await root_client.request("space-suggest")
    assert started["type"] == "space", started
    # then the agent's forced thinking_suggest makes 2 to 4 dormant children
    state = await next_event(root_client, "space-state")
    while len(state["data"]["space"]["nodes"]) < 3:
        root_client.events.remove(state)
        state = await next_event(root_client, "space-state")
    space = state["data"]["space"]
    children = [node for node in space["nodes"] if node["parentId"]]
    assert 2 <= len(children) <= 4
    assert {node["state"] for node in children} == {"dormant"}
    assert all(node["inheritedHandoff"].strip() for node in children)
    # when the person opens the first branch's conversation and chats there
    child = children[0]
    child_client = await connect(bearer(alice))
    resumed = await child_client.request(
        "session-resume",
        {"sessionId": child["sessionId"], "fingerprint": FINGERPRINT, "sinceSeq": 0},
    )
    assert resumed["type"] == "session-resumed", resumed
    await child_client.request("chat", {"text": "What do you know so far?"})
    await next_event(
        child_client, "chat-message", role="assistant", processId=child["chatProcessId"]
    )
    await settled(child["chatProcessId"], "IDLE")
    # and asks it to return (a control turn: the agent's forced thinking_return)
    returned = await ask_to_return(child_client, child["id"])
    if returned["type"] == "error":
        # A tiny model's forced call can still fail its schema twice (or its call time out on
        # CI's shared cores): the branch is then active again, and the person asks once more,
        # once its agent is at rest (CI saw it running again right after that reply, and a
        # return asked then is refused: "its agent is running; wait for it").
        assert returned["data"]["code"] == 409, returned
        assert returned["data"]["message"] == (
            "the agent did not return; the branch is active again"
        )
        await settled(child["chatProcessId"], "IDLE", "BLOCKED")
        returned = await ask_to_return(child_client, child["id"])
    # then the branch is returned and sealed with its Handoff
    assert returned["type"] == "space", returned
    node = next(n for n in returned["data"]["space"]["nodes"] if n["id"] == child["id"])
    assert node["state"] == "returned"
    assert node["returnedHandoff"].strip()
    # and its parent's conversation holds the notice of the return (appended at once, or by
    # the end of a turn the parent was running then: spaces/actions/notices.py)
    notice = f"[thinking: {child['id']} returned]"
    deadline = time.monotonic() + PATIENCE
    while True:
        root = await settled(root_chat, "IDLE")
        notices = await notices_of(root)
        if any(text.startswith(notice) for text in notices):
            break
        assert time.monotonic() < deadline, notices
        await asyncio.sleep(0.2)
    await child_client.ws.disconnect()
    await root_client.ws.disconnect()
