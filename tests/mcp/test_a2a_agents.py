"""The A2A face at /a2a/<project>/<recipe>, driven by the `a2a-sdk`'s own client (made from the
agent's card) and by plain JSON-RPC requests of the 0.3 protocol, against the Brain's ASGI
application served by uvicorn."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from a2a_face import calls
from processes.actions import steer
from processes.models import ThinkProcess
from recipes_app.models import Recipe, RecipeScope
from tests.support.a2a_brain import a2a_brain, a2a_client, rpc, user_message
from tests.support.marvin import plan, worker
from tests.support.tenancy import open_session
from tests.support.waiting import settled

pytestmark = pytest.mark.django_db(transaction=True)

CARD = "/.well-known/agent-card.json"


def saturn_script(script) -> None:
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Moons", "goal": "count the moons"},
                    {"kind": "AGGREGATE", "title": "Report"},
                ),
            },
            *worker("count the moons", "95 moons."),
            {"engine": "marvin", "step": "aggregate", "reply": "Saturn has 95 moons."},
        ]
    )


def test_the_sdk_client_sends_a_goal_to_a_public_agent_and_reads_its_task_to_completion(
    alice, script
):
    # given deep-think, a public recipe, and a marvin script with one worker and its report
    saturn_script(script)
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"

        async def think() -> tuple[str, list[StreamResponse], Task]:
            async with a2a_client(agent, alice.token) as (client, card):
                card_name = card.name
                # when the client sends it a goal and follows the stream
                events = [e async for e in client.send_message(user_message("study Saturn"))]
                task_id = events[0].task.id
                # and then reads the task with its history
                task = await client.get_task(GetTaskRequest(id=task_id, history_length=10))
            return card_name, events, task

        name, events, task = asyncio.run(think())
    # then the stream began with the task and ended with it completed
    assert name == "Deep think"
    assert events[0].task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    # and the task is a marvin process of alice's A2A session, done, with its report
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert "Saturn has 95 moons." in task.artifacts[0].parts[0].text
    assert task.history[0].parts[0].text == "study Saturn"
    process = ThinkProcess.objects.select_related("session").get(pk=int(task.id[3:]))
    assert (process.think_engine, process.recipe_name) == ("marvin", "deep-think")
    assert (process.session.client_type, process.session.owner_id) == ("a2a", alice.user.pk)
    assert task.context_id == process.session.public_id
    assert (process.status, process.close_reason) == ("CLOSED", "DONE")


def test_a_chat_agent_waits_for_input_and_takes_the_next_message_as_a_steer(alice):
    # given ford published as an agent of alice's project (the scripted model echoes)
    Recipe.objects.create(
        name="ford", engine="ford", scope=RecipeScope.PROJECT, project=alice.project, a2a=True
    )
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/ford"

        async def chat() -> tuple[Task, Task, Task, ListTasksResponse]:
            async with a2a_client(agent, alice.token, streaming=False) as (client, _):
                # when the client sends a message (blocking, not streamed)
                [first] = [e async for e in client.send_message(user_message("hello"))]
                # then a follow-up in the same task
                follow = user_message("again", task_id=first.task.id)
                [second] = [e async for e in client.send_message(follow)]
                # and cancels the task, then sends it one more message
                cancelled = await client.cancel_task(CancelTaskRequest(id=first.task.id))
                late = user_message("late", task_id=first.task.id)
                with pytest.raises(UnsupportedOperationError, match="cannot steer"):
                    _ = [e async for e in client.send_message(late)]
                listed = await client.list_tasks(ListTasksRequest())
            return first.task, second.task, cancelled, listed

        first, second, cancelled, listed = asyncio.run(chat())
    # then each answer left the task waiting for input with the reply as its message
    assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert first.status.message.parts[0].text == "echo: hello"
    assert second.id == first.id
    assert second.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert second.status.message.parts[0].text == "echo: again"
    # and the cancel stopped the process
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    process = ThinkProcess.objects.get(pk=int(first.id[3:]))
    assert (process.status, process.close_reason) == ("CLOSED", "STOPPED")
    # and the agent's tasks are that one
    assert [task.id for task in listed.tasks] == [first.id]


def test_a_stream_whose_task_settled_before_its_first_read_still_ends_on_that_status(
    alice, monkeypatch
):
    # given ford published as an agent, and a send that answers only once the turn is over
    # (as when a quick turn ends before the stream reads the task)
    Recipe.objects.create(
        name="ford", engine="ford", scope=RecipeScope.PROJECT, project=alice.project, a2a=True
    )
    sent = calls.send

    def send_then_settle(user, agent, **fields) -> tuple[Task, int]:
        task, answer = sent(user, agent, **fields)
        settled(int(task.id[3:]), "IDLE")
        return calls.get(user, agent, task_id=task.id, history=fields["history"]), answer

    monkeypatch.setattr(calls, "send", send_then_settle)
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/ford"

        async def talk() -> list[StreamResponse]:
            async with a2a_client(agent, alice.token) as (client, _):
                # when the SDK's client streams a message to it
                return [e async for e in client.send_message(user_message("hello"))]

        events = asyncio.run(talk())
    # then the task came first, already waiting for input, and the stream still ended on a
    # status update saying so, with the answer
    assert events[0].task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    last = events[-1].status_update
    assert last.task_id == events[0].task.id
    assert last.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert last.status.message.parts[0].text == "echo: hello"


def test_the_card_and_the_endpoint_need_the_api_token(alice):
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        # when the card is fetched and a message sent without a token, or with a wrong one
        card = httpx.get(agent + CARD)
        sent = rpc(agent, None, "message/send", {})
        wrong = rpc(agent, "not-a-token", "message/send", {})
        # and the card with alice's
        found = httpx.get(agent + CARD, headers={"Authorization": f"Bearer {alice.token}"})
    # then the first three are 401s with REST's body, and the card names the endpoint
    for answer in (card, sent, wrong):
        assert answer.status_code == 401
        assert answer.json()["error"] == "unauthenticated"
    assert found.status_code == 200
    interfaces = found.json()["supportedInterfaces"]
    assert {(i["url"], i["protocolVersion"]) for i in interfaces} == {
        (agent, "1.0"),
        (agent, "0.3"),
    }
    assert "bearer" in found.json()["securitySchemes"]


def test_a_recipe_that_is_not_public_or_another_tenants_project_is_not_an_agent(alice, bob):
    headers = {"Authorization": f"Bearer {alice.token}"}
    with a2a_brain() as base:
        # when alice fetches the card of ford (not public), of deep-think in bob's project,
        # and of a recipe there is none of, and posts to the first
        answers = [
            httpx.get(f"{base}/a2a/{alice.project_id}/ford{CARD}", headers=headers),
            httpx.get(f"{base}/a2a/{bob.project_id}/deep-think{CARD}", headers=headers),
            httpx.get(f"{base}/a2a/{alice.project_id}/no-such{CARD}", headers=headers),
            rpc(f"{base}/a2a/{alice.project_id}/ford", alice.token, "message/send", {}),
        ]
    # then each is a 404, and nothing was created
    assert [answer.status_code for answer in answers] == [404, 404, 404, 404]
    assert "no A2A agent 'ford'" in answers[0].json()["message"]
    assert not ThinkProcess.objects.filter(session__client_type="a2a").exists()


def test_another_tenants_task_is_not_found_and_keeps_running(alice, bob):
    # given a process of bob's
    theirs = f"tp_{open_session(bob).chat_process_id}"
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"

        async def peek() -> list[TaskNotFoundError]:
            errors = []
            async with a2a_client(agent, alice.token) as (client, _):
                with pytest.raises(TaskNotFoundError) as got:
                    await client.get_task(GetTaskRequest(id=theirs))
                errors.append(got.value)
                with pytest.raises(TaskNotFoundError) as cancelled:
                    await client.cancel_task(CancelTaskRequest(id=theirs))
                errors.append(cancelled.value)
            return errors

        # when alice reads and cancels it through the SDK client, and through 0.3 JSON-RPC
        errors = asyncio.run(peek())
        got = rpc(agent, alice.token, "tasks/get", {"id": theirs}).json()
        cancelled = rpc(agent, alice.token, "tasks/cancel", {"id": theirs}).json()
    # then each is task-not-found, and bob's process was not stopped
    assert [str(error) for error in errors] == [f"process {theirs} not found"] * 2
    assert got["error"]["code"] == cancelled["error"]["code"] == -32001
    assert ThinkProcess.objects.get(pk=int(theirs[3:])).status != "CLOSED"


def test_bad_params_are_json_rpc_errors_naming_the_field(alice):
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        text = {"kind": "text", "text": "x"}
        # when messages come without parts, with a file part, with a context of nobody's,
        # and a task is read by an id that is no task id
        answers = {
            "message.parts": {"message": {"role": "user", "messageId": "a", "parts": []}},
            "message.parts[0]": {
                "message": {
                    "role": "user",
                    "messageId": "b",
                    "parts": [{"kind": "file", "file": {"uri": "http://example.invalid/a"}}],
                }
            },
            "message.contextId": {
                "message": {"role": "user", "messageId": "c", "parts": [text], "contextId": "x"}
            },
        }
        replies = {
            field: rpc(agent, alice.token, "message/send", params).json()
            for field, params in answers.items()
        }
        missing = rpc(agent, alice.token, "message/send", {}).json()
    # then each is an invalid-params error whose message and data name the field
    for field, reply in replies.items():
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["message"].startswith(f"{field}:")
        assert reply["error"]["data"] == {"field": field}
    # and a request without its message is an invalid request naming it (the SDK's check)
    assert missing["error"]["code"] == -32600
    assert "message" in str(missing["error"]["data"])
    assert not ThinkProcess.objects.filter(session__client_type="a2a").exists()


def test_a_0_3_client_streams_a_goal_as_server_sent_events_until_the_final_one(alice, script):
    # given deep-think and a marvin script with one worker and its report
    saturn_script(script)
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        message = {
            "role": "user",
            "messageId": "s1",
            "parts": [{"kind": "text", "text": "study Saturn"}],
        }
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "message/stream",
            "params": {"message": message},
        }
        headers = {"Authorization": f"Bearer {alice.token}"}
        # when a plain HTTP client posts message/stream (0.3: no A2A-Version header)
        with httpx.stream("POST", agent, json=body, headers=headers, timeout=60) as answer:
            events = [
                json.loads(line.removeprefix("data:"))
                for line in answer.iter_lines()
                if line.startswith("data:")
            ]
    # then the events are JSON-RPC results: the task first, the last one final and completed
    results = [event["result"] for event in events]
    assert all(event["id"] == 7 for event in events)
    assert results[0]["kind"] == "task"
    assert results[-1]["kind"] == "status-update"
    assert (results[-1]["final"], results[-1]["status"]["state"]) == (True, "completed")
    artifacts = [r for r in results if r["kind"] == "artifact-update"]
    assert "Saturn has 95 moons." in artifacts[0]["artifact"]["parts"][0]["text"]


def test_the_reply_to_an_answer_is_the_state_it_led_to_not_the_question_it_answered(
    alice, script, monkeypatch
):
    # given a deep think whose plan asks the person a question, then reports; and a lane that
    # takes a steer half a second late, as a busy Celery worker does
    woken = steer.wake_lane

    def wake_late(process_id: int) -> None:
        threading.Timer(0.5, woken, [process_id]).start()

    monkeypatch.setattr(steer, "wake_lane", wake_late)
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "USER_INPUT", "title": "Colour", "goal": "Which colour?"},
                    {"kind": "AGGREGATE", "title": "Report"},
                ),
            },
            {"engine": "marvin", "step": "aggregate", "reply": "Saturn, in blue."},
        ]
    )
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"

        def send(text: str, **fields: str) -> dict:
            message = {"role": "user", "messageId": text, "parts": [{"kind": "text", "text": text}]}
            answer = rpc(agent, alice.token, "message/send", {"message": {**message, **fields}})
            return answer.json()["result"]

        # when the client sends the goal, and answers the question the task asks
        asked = send("study Saturn")
        replied = send("blue", taskId=asked["id"])
    # then the first reply is the question; the reply to the answer is where the answer led
    # (before: the same input-required, with the question it answered)
    assert asked["status"]["state"] == "input-required"
    assert replied["id"] == asked["id"]
    assert replied["status"]["state"] == "completed", replied["status"]
    assert "Saturn, in blue." in replied["artifacts"][0]["parts"][0]["text"]


def test_a_body_over_the_frame_limit_is_a_413_before_it_is_read_and_nothing_is_stored(
    alice, settings
):
    # given the frame limit at 64 kB
    settings.VANCETOPE_MAX_FRAME_BYTES = 64 * 1024
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        goal = "x" * (200 * 1024)
        message = {"role": "user", "messageId": "big", "parts": [{"kind": "text", "text": goal}]}
        headers = {"Authorization": f"Bearer {alice.token}"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        # when a member posts a message/send of 200 kB, with its length and chunked
        sized = httpx.post(agent, json=body, headers=headers, timeout=30)

        def chunks():
            raw = json.dumps(body).encode()
            for start in range(0, len(raw), 8192):
                yield raw[start : start + 8192]

        chunked = httpx.post(agent, content=chunks(), headers=headers, timeout=30)
        # and a small one still works
        small = rpc(
            agent,
            alice.token,
            "message/send",
            {"message": {**message, "parts": [{"kind": "text", "text": "hi"}]}},
        )
    # then both big ones are a 413 with REST's body naming the limit; no process was made
    for answer in (sized, chunked):
        assert answer.status_code == 413, answer.text[:300]
        assert answer.json()["error"] == "too-large"
        assert "65536 bytes" in answer.json()["message"]
    assert small.status_code == 200
    assert "result" in small.json()
    assert not ThinkProcess.objects.filter(goal__startswith="xxx").exists()
