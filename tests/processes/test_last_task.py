"""The process list carries each process's last task: its task-tree node (marvin) or its last
turn, on REST, the WebSocket and the web list, read in one statement whatever the list's
length."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.actions import steer
from processes.actions.create import create_process
from processes.models import ThinkProcess
from processes.states import Status
from tests.support.marvin import worker
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import closed_process, wait_until
from tests.support.ws import bearer, connect
from tests.support.ws import open_session as open_ws_session

pytestmark = pytest.mark.django_db(transaction=True)


def listed(tenancy: Tenancy) -> dict[str, Any]:
    response = tenancy.api().get("/api/processes")
    assert response.status_code == 200, response.content
    return {row["id"]: row["lastTask"] for row in response.json()["results"]}


def answered_ford(tenancy: Tenancy, text: str) -> ThinkProcess:
    process = create_process(open_session(tenancy), engine="ford")
    steer.steer_process(process.pk, text)
    found = wait_until(
        lambda: ThinkProcess.objects.filter(
            pk=process.pk, status=Status.IDLE, consumed_count=1
        ).first()
    )
    assert found is not None
    return found


def test_rest_lists_a_marvins_last_node_a_fords_last_turn_and_null_before_any(alice, script):
    # given a marvin whose two tasks ran, a ford that answered one message, and an idle frankie
    script(
        [
            *worker("count the moons", "95 moons."),
            {"engine": "marvin", "step": "aggregate", "reply": "Saturn: 95 moons."},
            {"engine": "ford", "reply": "Hello to you."},
        ]
    )
    tasks = [
        {"kind": "WORKER", "title": "Moons", "goal": "count the moons"},
        {"kind": "AGGREGATE", "title": "Report"},
    ]
    session = open_session(alice)
    marvin = create_process(session, goal="study Saturn", engine="marvin", params={"tasks": tasks})
    closed_process(marvin.pk)
    ford = answered_ford(alice, "hello there\nand a second line")
    idle = create_process(session, engine="frankie")
    # when the person lists their processes
    rows = listed(alice)
    # then marvin's last task is the node that finished last, ford's its turn's first line
    aggregate = ThinkProcess.objects.get(pk=marvin.pk).engine_state["taskTree"]["nodes"][-1]
    assert rows[marvin.public_id] == {
        "kind": "node",
        "id": aggregate["id"],
        "title": "Report",
        "status": "DONE",
    }
    assert rows[ford.public_id] == {
        "kind": "turn",
        "id": None,
        "title": "hello there",
        "status": "DONE",
    }
    # and a process that has done nothing yet has none
    assert rows[idle.public_id] is None


def test_a_running_turn_is_the_last_task_while_it_runs(alice, script):
    # given a ford whose answer takes a while
    script([{"engine": "ford", "reply": "Slowly.", "delay": 1.5}])
    process = create_process(open_session(alice), engine="ford")
    # when it runs a turn on a message
    steer.steer_process(process.pk, "take your time")
    wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).status == Status.RUNNING)
    # then the list shows that turn as RUNNING, and DONE once it committed
    assert listed(alice)[process.public_id] == {
        "kind": "turn",
        "id": None,
        "title": "take your time",
        "status": "RUNNING",
    }
    wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).status == Status.IDLE)
    assert listed(alice)[process.public_id]["status"] == "DONE"


def test_the_list_takes_as_many_statements_for_six_processes_as_for_one(alice, script):
    # given one ford that answered
    script([{"engine": "ford", "reply": "Yes."}])
    answered_ford(alice, "first")
    client = alice.api()
    client.get("/api/processes")  # the caches of the first request

    def statements() -> tuple[int, int]:
        """The statements of one listing, and how many rows had a last task."""
        with CaptureQueriesContext(connection) as captured:
            response = client.get("/api/processes")
        assert response.status_code == 200
        tasks = sum(1 for row in response.json()["results"] if row["lastTask"])
        return len(captured.captured_queries), tasks

    one, tasks = statements()
    assert tasks == 1
    # when five more answered
    for n in range(5):
        answered_ford(alice, f"message {n}")
    # then listing all six takes the same statements as listing one: no query per process
    assert statements() == (one, 6)


async def test_the_websocket_process_list_carries_the_last_task(alice, script):
    # given a session whose chat (ford) answered a message
    script([{"engine": "ford", "reply": "Hi."}])
    client = await connect(bearer(alice))
    created = await open_ws_session(client, alice, recipe="ford")
    await client.request("chat", {"text": "hi ford"})
    await client.event("chat-message", role="assistant")
    # when the client lists the session's processes (once the turn committed)
    for _ in range(100):
        reply = await client.request("process-list")
        [row] = reply["data"]["processes"]
        if row["lastTask"] and row["lastTask"]["status"] == "DONE":
            break
    # then its chat process's last task is that turn
    assert row["id"] == created["chatProcessId"]
    assert row["lastTask"] == {"kind": "turn", "id": None, "title": "hi ford", "status": "DONE"}
    await client.ws.disconnect()


def test_the_web_list_shows_each_processs_last_task(alice, script, client):
    # given a ford that answered, and the person logged in to the web UI
    script([{"engine": "ford", "reply": "Hi."}])
    ford = answered_ford(alice, "hello web")
    client.force_login(alice.user)
    # when they open the process list
    page = client.get("/").content.decode()
    # then its row has a last-task cell with the turn and its status
    row = page.split(f'data-process="{ford.public_id}"')[1].split("</tr>")[0]
    assert '<td data-label="Last task" class="last-task">hello web <small>DONE</small></td>' in row
