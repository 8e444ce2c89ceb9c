"""Params of a new process are refused at create when they nest deeper or weigh more than the
limits (a 400 naming the field and the limit, nothing created), on every face: a process with
params nested hundreds deep could be created but never started, stopped or closed."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from processes.actions.create import PARAMS_MAX_BYTES, PARAMS_MAX_DEPTH
from processes.models import ThinkProcess
from tests.support.tenancy import open_session
from tests.support.ws import bearer, connect
from tests.support.ws import open_session as open_socket_session

pytestmark = pytest.mark.django_db(transaction=True)


def nested_text(depth: int) -> str:
    """A JSON object nested `depth` objects deep (written out: it is deeper than a client's
    encoder may follow)."""
    return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)


def create_body(session_id: str, params_text: str, start: bool = False) -> str:
    head = json.dumps({"session": session_id, "thinkEngine": "ford", "goal": "g", "start": start})
    return head[:-1] + f', "params": {params_text}}}'


def test_params_nested_600_deep_are_a_400_naming_the_field_and_the_limit(alice):
    # given alice's session
    session = open_session(alice)
    # when she creates a process with params nested 600 objects deep
    response = alice.api().post(
        "/api/processes",
        create_body(session.public_id, nested_text(600)),
        content_type="application/json",
    )
    # then it is refused naming params and the depth limit, and nothing is created
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert "params" in body["fields"]
    assert f"at most {PARAMS_MAX_DEPTH}" in body["message"]
    assert ThinkProcess.objects.filter(session=session).count() == 1  # the chat process


def test_params_over_the_size_limit_are_a_400_naming_the_field_and_the_limit(alice):
    session = open_session(alice)
    params = json.dumps({"text": "x" * PARAMS_MAX_BYTES})
    response = alice.api().post(
        "/api/processes", create_body(session.public_id, params), content_type="application/json"
    )
    assert response.status_code == 400, response.content[:300]
    assert "params" in response.json()["fields"]
    assert f"at most {PARAMS_MAX_BYTES} bytes" in response.json()["message"]
    assert ThinkProcess.objects.filter(session=session).count() == 1


def test_params_at_the_depth_limit_make_a_process_that_starts_and_stops(alice):
    # given a process created with params exactly as deep as allowed
    session = open_session(alice)
    api = alice.api()
    created = api.post(
        "/api/processes",
        create_body(session.public_id, nested_text(PARAMS_MAX_DEPTH)),
        content_type="application/json",
    )
    assert created.status_code == 201, created.content[:300]
    process_id = created.json()["id"]
    # when it is started and stopped
    started = api.post(f"/api/processes/{process_id}/start")
    stopped = api.post(f"/api/processes/{process_id}/stop")
    # then both work
    assert started.status_code == 200, started.content[:300]
    assert stopped.status_code == 200, stopped.content[:300]
    assert stopped.json()["status"] == "CLOSED"


@pytest.mark.asyncio
async def test_a_process_create_frame_with_params_too_deep_is_a_400_naming_data_params(alice):
    # given a socket with a session
    client = await connect(bearer(alice))
    created = await open_socket_session(client, alice)
    # when a process-create frame carries params nested 600 deep
    frame = create_body("unused", nested_text(600)).replace('"session": "unused", ', "")
    frame = frame.replace("{", '{"type": "process-create", "id": "deep", "data": {', 1) + "}"
    await client.ws.send_to(text_data=frame)
    reply = await client.reply_to("deep")
    # then it is refused naming data.params and the limit; the session keeps its chat only
    assert reply["data"]["code"] == 400, reply
    assert reply["data"]["field"] == "data.params"
    assert f"at most {PARAMS_MAX_DEPTH}" in reply["data"]["message"]
    count = await database_sync_to_async(
        ThinkProcess.objects.filter(session_id=int(created["session"]["id"][5:])).count
    )()
    assert count == 1
