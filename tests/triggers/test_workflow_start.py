"""`workflow-start` over the WebSocket: the workflow runs in the person's own session, so its
task tree reaches their socket; bad input is an error naming the frame's field."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from processes.models import ThinkProcess
from tests.support.ws import bearer, connect, open_session
from tests.triggers.helpers import REVIEW, create_workflow, finished_run
from triggers.models import RunStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ASKING = {
    **REVIEW,
    "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which ${input.topic}?"}],
}


async def test_workflow_start_runs_the_workflow_in_the_persons_session(alice):
    # given alice's session and a workflow that asks her first
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    workflow_id = await database_sync_to_async(create_workflow)(alice, ASKING)
    # when she starts it over her socket
    reply = await client.request(
        "workflow-start", {"workflowId": workflow_id, "input": {"topic": "moons"}}
    )
    # then the reply names the process and its run, and the process is in her session
    assert reply["type"] == "workflow-started", reply
    process_id = reply["data"]["process"]["id"]
    assert reply["data"]["process"]["sessionId"] == created["session"]["id"]
    # and its task tree reaches her socket
    tree = await client.event("task-tree", processId=process_id)
    nodes = tree["data"]["tree"]["nodes"]
    assert [(n["kind"], n["goal"]) for n in nodes][1:2] == [("USER_INPUT", "Which moons?")]
    run = await database_sync_to_async(finished_run)(reply["data"]["runId"])
    assert (run.status, run.client_type, run.owns_session) == (RunStatus.BLOCKED, "cli", False)
    process = await database_sync_to_async(ThinkProcess.objects.get)(
        pk=int(process_id.removeprefix("tp_"))
    )
    assert process.session_id == int(created["session"]["id"].removeprefix("sess_"))
    await client.ws.disconnect()


async def test_workflow_start_without_an_input_names_it_and_another_tenants_is_a_404(alice, bob):
    # given alice's workflow and bob's session
    workflow_id = await database_sync_to_async(create_workflow)(alice, ASKING)
    mine = await connect(bearer(alice))
    await open_session(mine, alice)
    theirs = await connect(bearer(bob))
    await open_session(theirs, bob)
    # when alice leaves out the input
    missing = await mine.request("workflow-start", {"workflowId": workflow_id, "input": {}})
    # then the error names the frame's field
    assert missing["type"] == "error"
    assert missing["data"]["code"] == 400
    assert missing["data"]["field"] == "data.input.topic"
    # and bob cannot start it at all
    refused = await theirs.request(
        "workflow-start", {"workflowId": workflow_id, "input": {"topic": "x"}}
    )
    assert refused["data"]["code"] == 404
    await mine.ws.disconnect()
    await theirs.ws.disconnect()
