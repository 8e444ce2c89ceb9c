"""Client tools over a real WebSocket: tools-register, tool-call event, tool-result back."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from engines.registry import get_engine
from processes.capabilities.tools import toolbox_for
from processes.models import ThinkProcess
from processes.states import Status
from sessions_app.models import Session
from tests.support.client_tools import LIST_FILES, coding_session, send_tool_result
from tests.support.ws import bearer, connect, open_session
from vancetope.tools.models import CallStatus, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def wait_for_status(public_id: str, status: str, within: float = 10) -> ThinkProcess:
    """Poll without holding the thread-sensitive executor, which the consumer needs to take
    further frames (channels closes old connections there before each one)."""
    pk = int(public_id.removeprefix("tp_"))
    load = database_sync_to_async(
        ThinkProcess.objects.select_related("session").get, thread_sensitive=False
    )
    deadline = asyncio.get_running_loop().time() + within
    while True:
        process = await load(pk=pk)
        if process.status == status:
            return process
        assert asyncio.get_running_loop().time() < deadline, f"{public_id} is {process.status}"
        await asyncio.sleep(0.02)


async def test_client_answers_a_tool_call_and_the_answer_reaches_the_llm_once(alice, bob, llm):
    provider = llm(LIST_FILES)
    client = await connect(bearer(alice))
    chat_id = await coding_session(client, alice)
    # when the process asks for the client's tool
    await client.request("chat", {"text": "list the files"})
    call = await client.event("tool-call", processId=chat_id, tool="run_shell")
    assert call["data"]["arguments"] == {"command": "ls"}
    assert call["data"]["callId"].startswith("call_")
    # and the client answers
    await send_tool_result(client, call["data"]["callId"], ok=True, result="README.md\nsetup.py")
    # then the answer reaches the LLM, whose reply goes back to the client
    reply = await client.event("chat-message", role="assistant")
    assert reply["data"]["text"] == "result: README.md\nsetup.py"
    assert provider.offered[0] == ["run_shell"]
    # a second result for the same call is refused, and nothing changes
    await send_tool_result(client, call["data"]["callId"], ok=True, result="other")
    duplicate = await client.next_reply()
    assert duplicate["type"] == "error"
    assert (duplicate["data"]["code"], duplicate["data"]["error"]) == (409, "duplicate-result")
    row = await database_sync_to_async(ToolCall.objects.get)()
    assert (row.status, row.result) == (CallStatus.OK, "README.md\nsetup.py")
    # an unknown call id is refused
    await send_tool_result(client, "call_999999", ok=True, result="x")
    unknown = await client.next_reply()
    assert unknown["data"]["code"] == 404
    # another session's client cannot answer this session's call
    intruder = await connect(bearer(bob))
    await open_session(intruder, bob)
    await send_tool_result(intruder, call["data"]["callId"], ok=True, result="x")
    foreign = await intruder.next_reply()
    assert foreign["data"]["code"] == 404
    await intruder.ws.disconnect()
    await client.ws.disconnect()


async def test_a_silent_client_gives_a_tool_error_after_the_timeout_and_stays_resumable(
    alice, llm, settings
):
    settings.VANCETOPE_CLIENT_TOOL_TIMEOUT = 0.5
    llm([*LIST_FILES, {"match": "hello", "reply": "hello again"}])
    client = await connect(bearer(alice))
    chat_id = await coding_session(client, alice)
    # when the client never answers the tool call
    await client.request("chat", {"text": "list the files"})
    call = await client.event("tool-call", processId=chat_id)
    # then the LLM gets a clear tool error after the timeout, and the turn ends normally
    reply = await client.event("chat-message", role="assistant")
    assert reply["data"]["text"] == (
        "result: error (timeout): client tool run_shell timed out: the client did not answer "
        "within 0.5s"
    )
    process = await wait_for_status(chat_id, Status.IDLE)
    assert process.last_error == ""
    row = await database_sync_to_async(ToolCall.objects.get)()
    assert row.status == CallStatus.TIMED_OUT
    # a late answer is refused
    await send_tool_result(client, call["data"]["callId"], ok=True, result="too late")
    late = await client.next_reply()
    assert (late["data"]["code"], late["data"]["error"]) == (409, "late-result")
    # and the process is still resumable: pause, resume, and it answers again
    paused = await client.request("process-pause", {"processId": chat_id})
    assert paused["data"]["process"]["status"] == "PAUSED"
    resumed = await client.request("process-resume", {"processId": chat_id})
    assert resumed["data"]["process"]["status"] == "IDLE"
    await client.request("chat", {"text": "hello"})
    again = await client.event("chat-message", after=reply["seq"], role="assistant")
    assert again["data"]["text"] == "hello again"
    await client.ws.disconnect()


async def test_a_client_that_disconnects_fails_its_open_calls_at_once(alice, llm, settings):
    settings.VANCETOPE_CLIENT_TOOL_TIMEOUT = 30
    llm(LIST_FILES)
    client = await connect(bearer(alice))
    chat_id = await coding_session(client, alice)
    await client.request("chat", {"text": "list the files"})
    await client.event("tool-call", processId=chat_id)
    # when the client goes away without answering
    await client.ws.disconnect()
    # then the call fails as a disconnected client (long before the 30 s timeout) and the
    # process is suspended, resumable, with nothing pending lost
    process = await wait_for_status(chat_id, Status.SUSPENDED)
    row = await database_sync_to_async(ToolCall.objects.get)()
    assert row.status in {CallStatus.FAILED, CallStatus.CANCELLED}
    # and its tools left with it: no pool offers them until a client is bound again, though
    # their declarations stay (a later call waits BLOCKED for a client, naming the tool)
    session = await database_sync_to_async(lambda: Session.objects.get(pk=process.session_id))()
    assert [tool["name"] for tool in session.client_tools] == ["run_shell"]
    engine = get_engine(process.think_engine)
    assert engine is not None
    box = toolbox_for(process, engine.allowed_tools, lambda: None)
    offered = await database_sync_to_async(box.names)()
    assert "run_shell" not in offered


async def test_a_worker_whose_tools_wait_on_the_client_runs_its_goal_in_the_lane(alice, llm):
    llm(LIST_FILES)
    client = await connect(bearer(alice))
    await coding_session(client, alice)
    # when a frankie-coding worker is created over the same socket
    created = await client.request(
        "process-create", {"goal": "list the files", "recipe": "frankie-coding"}
    )
    # then the reply comes at once (the socket is not blocked by its own tool call) …
    assert created["type"] == "process-created"
    worker_id = created["data"]["process"]["id"]
    # … and the lane asks this client for the tool and finishes with its answer
    call = await client.event("tool-call", processId=worker_id)
    await send_tool_result(client, call["data"]["callId"], ok=True, result="main.py")
    process = await wait_for_status(worker_id, Status.CLOSED)
    assert process.engine_state["result"] == "result: main.py"
    await client.ws.disconnect()
