"""The WebSocket contract of docs/protocol.md, through the real ASGI stack (auth, origin)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from processes.models import PendingMessage
from processes.states import Status
from sessions_app.models import Session, SessionStatus
from tests.support.ws import FINGERPRINT, Client, bearer, connect, open_session, process_row
from vancetope.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_new_user_flow_chat_list_stop_steer_and_bad_frame(alice):
    client = await connect(bearer(alice))
    # session-create starts the chat process
    created = await open_session(client, alice)
    chat_id = created["chatProcessId"]
    assert created["session"]["status"] == "OPEN"
    # chat "hello" streams deltas and ends with the stored reply
    accepted = await client.request("chat", {"text": "hello"})
    assert accepted["type"] == "chat-accepted"
    assert accepted["data"]["processId"] == chat_id
    reply = await client.event("chat-message", role="assistant")
    assert reply["data"]["text"] == "echo: hello"
    deltas = [e["data"]["text"] for e in client.events if e["event"] == "chat-delta"]
    assert "".join(deltas) == "echo: hello"
    # the chat process is IDLE in the list
    await client.event("process-status", after=reply["seq"], processId=chat_id, status="IDLE")
    listing = await client.request("process-list")
    assert [(p["id"], p["status"]) for p in listing["data"]["processes"]] == [(chat_id, "IDLE")]
    # stop, then steer → 409 and the process is unchanged
    stopped = await client.request("process-stop", {"processId": chat_id})
    assert stopped["type"] == "process-stopped"
    assert stopped["data"]["process"]["status"] == "CLOSED"
    before = await process_row(chat_id)
    refused = await client.request("process-steer", {"processId": chat_id, "message": "more"})
    assert refused["type"] == "error"
    assert refused["data"]["code"] == 409
    assert refused["data"]["message"] == f"cannot steer process {chat_id}: it is CLOSED/STOPPED"
    after = await process_row(chat_id)
    assert (after.status, after.close_reason, after.updated_at) == (
        before.status,
        before.close_reason,
        before.updated_at,
    )
    # a non-JSON frame → 400, and the socket stays usable
    await client.ws.send_to(text_data="this is not json")
    error = await client.next_reply()
    assert error["type"] == "error"
    assert error["data"]["code"] == 400
    assert "not JSON" in error["data"]["message"]
    engines = await client.request("thinkengines-list")
    assert "ford" in [engine["name"] for engine in engines["data"]["engines"]]
    await client.ws.disconnect()


async def test_events_carry_a_seq_that_grows_by_one(alice):
    client = await connect(bearer(alice))
    await open_session(client, alice)
    await client.request("chat", {"text": "one"})
    await client.event("chat-message", role="assistant", text="echo: one")
    await client.request("chat", {"text": "two"})
    await client.event("chat-message", role="assistant", text="echo: two")
    seqs = [event["seq"] for event in client.events]
    assert seqs == list(range(1, len(seqs) + 1))
    await client.ws.disconnect()


@pytest.mark.parametrize(
    "headers",
    [[], [(b"authorization", b"Bearer vt_not-a-real-token")], [(b"authorization", b"Basic x")]],
    ids=["no-token", "wrong-token", "wrong-scheme"],
)
async def test_socket_without_a_valid_token_is_closed_4401(alice, headers):
    communicator = WebsocketCommunicator(application, "/ws/brain/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    closing = await communicator.receive_output(timeout=5)
    assert closing == {"type": "websocket.close", "code": 4401}


async def test_token_in_query_string_authenticates_browsers(alice):
    client = await connect([], path=f"/ws/brain/?token={alice.token}")
    engines = await client.request("thinkengines-list")
    assert engines["type"] == "thinkengines"
    await client.ws.disconnect()


async def test_cross_site_origin_is_rejected(alice):
    headers = [*bearer(alice), (b"origin", b"https://evil.example")]
    communicator = WebsocketCommunicator(application, "/ws/brain/", headers=headers)
    connected, _ = await communicator.connect()
    assert not connected


@pytest.mark.parametrize(
    ("frame", "code", "error", "text"),
    [
        ({"type": "chat", "data": {}}, 400, "invalid", "data.text: Field required"),
        ({"type": "chat", "data": {"text": "x", "mood": 1}}, 400, "invalid", "data.mood"),
        ({"type": "warp-drive", "data": {}}, 400, "unknown-type", "unknown message type"),
        ([1, 2, 3], 400, "bad-request", "must be a JSON object"),
        ({"type": "process-steer", "data": {"processId": "tp_1"}}, 400, "invalid", "data.message"),
        ({"type": "inbox-answer", "data": {"itemId": "inb_1"}}, 400, "invalid", "data.answer"),
    ],
)
async def test_bad_frames_get_a_precise_error_and_the_socket_stays_open(
    alice, frame, code, error, text
):
    client = await connect(bearer(alice))
    if isinstance(frame, dict):
        frame["id"] = "bad"
    await client.ws.send_to(text_data=json.dumps(frame))
    reply = await client.next_reply()
    assert reply["type"] == "error"
    assert reply["data"]["code"] == code
    assert reply["data"]["error"] == error
    assert text in reply["data"]["message"]
    if isinstance(frame, dict):
        assert reply["replyTo"] == "bad"
    still_there = await client.request("thinkengines-list")
    assert still_there["type"] == "thinkengines"
    await client.ws.disconnect()


async def test_schema_error_names_the_field(alice):
    client = await connect(bearer(alice))
    reply = await client.request("session-create", {"clientType": "toaster"})
    assert reply["data"]["code"] == 400
    assert reply["data"]["field"] == "data.clientType"
    await client.ws.disconnect()


async def test_oversized_frame_is_refused_with_413(alice, settings):
    settings.VANCETOPE_MAX_FRAME_BYTES = 1000
    client = await connect(bearer(alice))
    await client.ws.send_to(text_data=json.dumps({"type": "chat", "data": {"text": "x" * 2000}}))
    reply = await client.next_reply()
    assert reply["data"]["code"] == 413
    await client.ws.disconnect()


async def test_chat_before_any_session_is_a_conflict(alice):
    client = await connect(bearer(alice))
    reply = await client.request("chat", {"text": "hello?"})
    assert reply["data"]["code"] == 409
    assert "session-create" in reply["data"]["message"]
    await client.ws.disconnect()


async def test_foreign_tenants_process_is_not_found_and_left_alone(alice, bob):
    bobs = await connect(bearer(bob))
    bob_chat = (await open_session(bobs, bob))["chatProcessId"]
    alices = await connect(bearer(alice))
    await open_session(alices, alice)
    for kind, data in [
        ("process-get", {"processId": bob_chat}),
        ("process-stop", {"processId": bob_chat}),
        ("process-steer", {"processId": bob_chat, "message": "hijack"}),
    ]:
        reply = await alices.request(kind, data)
        assert reply["data"]["code"] == 404, (kind, reply)
        assert reply["data"]["message"] == f"process {bob_chat} not found"
    row = await process_row(bob_chat)
    assert row.status == Status.IDLE
    pending = await database_sync_to_async(PendingMessage.objects.filter(process=row).count)()
    assert pending == 0
    foreign_project = await alices.request(
        "session-create", {"clientType": "cli", "projectId": bob.project_id}
    )
    assert foreign_project["data"]["code"] == 404
    await alices.ws.disconnect()
    await bobs.ws.disconnect()


async def test_process_create_with_goal_answers_and_process_get_shows_conversation(alice):
    client = await connect(bearer(alice))
    await open_session(client, alice)
    created = await client.request(
        "process-create", {"goal": "name a planet", "thinkEngine": "ford"}
    )
    assert created["type"] == "process-created"
    process = created["data"]["process"]
    assert process["status"] == "IDLE"
    assert process["thinkEngine"] == "ford"
    # its goal is answered in the first turn its start queued; the client sees it end
    await client.event("chat-message", processId=process["id"], role="assistant")
    detail = await client.request("process-get", {"processId": process["id"]})
    contents = [m["content"] for m in detail["data"]["process"]["conversation"]]
    assert contents == ["name a planet", "echo: name a planet"]
    assert detail["data"]["process"]["pending"] == 0
    recipes = await client.request("recipes-list")
    assert "ford" in [recipe["name"] for recipe in recipes["data"]["recipes"]]
    await client.ws.disconnect()


async def test_pause_steer_resume_over_the_socket(alice):
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice))["chatProcessId"]
    paused = await client.request("process-pause", {"processId": chat_id})
    assert paused["data"]["process"]["status"] == "PAUSED"
    steered = await client.request("process-steer", {"processId": chat_id, "message": "waiting"})
    assert steered["data"] == {"processId": chat_id, "pending": 1, "seq": 1}
    resumed = await client.request("process-resume", {"processId": chat_id})
    assert resumed["type"] == "process-resumed"
    reply = await client.event("chat-message", role="assistant")
    assert reply["data"]["text"] == "echo: waiting"
    await client.ws.disconnect()


@database_sync_to_async
def session_row(public_id: str) -> Session:
    return Session.objects.get(pk=int(public_id.removeprefix("sess_")))


async def disconnect_and_wait_suspended(client: Client, session_id: str) -> None:
    await client.ws.disconnect()
    session = await session_row(session_id)
    assert session.status == SessionStatus.SUSPENDED
    assert session.suspend_cause == "DISCONNECT"


async def test_disconnect_suspends_and_identical_fingerprint_resumes_to_idle(alice):
    first = await connect(bearer(alice))
    created = await open_session(first, alice)
    session_id, chat_id = created["session"]["id"], created["chatProcessId"]
    await first.request("chat", {"text": "before"})
    await first.event("chat-message", role="assistant")
    last_seen = first.events[-1]["seq"]
    await disconnect_and_wait_suspended(first, session_id)
    assert (await process_row(chat_id)).status == Status.SUSPENDED
    # when the same machine and directory come back
    second = await connect(bearer(alice))
    resumed = await second.request(
        "session-resume",
        {"sessionId": session_id, "fingerprint": FINGERPRINT, "sinceSeq": last_seen},
    )
    # then
    assert resumed["type"] == "session-resumed"
    assert resumed["data"]["session"]["status"] == "OPEN"
    statuses = {p["id"]: p["status"] for p in resumed["data"]["processes"]}
    assert statuses == {chat_id: "IDLE"}
    missed = resumed["data"]["missed"]
    assert [e["seq"] for e in missed] == list(range(last_seen + 1, last_seen + 1 + len(missed)))
    assert any(
        e["event"] == "process-status" and e["data"]["status"] == "SUSPENDED" for e in missed
    )
    await second.request("chat", {"text": "after"})
    reply = await second.event("chat-message", role="assistant", text="echo: after")
    assert reply["seq"] > missed[-1]["seq"]
    await second.ws.disconnect()


async def test_a_reloaded_page_whose_old_socket_leaves_last_keeps_its_session_open(alice):
    # given a chat over one socket
    old = await connect(bearer(alice))
    created = await open_session(old, alice)
    session_id, chat_id = created["session"]["id"], created["chatProcessId"]
    await old.request("chat", {"text": "before"})
    await old.event("chat-message", role="assistant")
    # when the page reloads: its new socket resumes the session before the old one is gone
    new = await connect(bearer(alice))
    resumed = await new.request(
        "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT}
    )
    assert resumed["type"] == "session-resumed"
    await old.ws.disconnect()
    # then the session and its chat stay as the new socket found them, and it chats on
    session = await session_row(session_id)
    assert session.status == SessionStatus.OPEN
    assert (await process_row(chat_id)).status == Status.IDLE
    await new.request("chat", {"text": "after"})
    await new.event("chat-message", role="assistant", text="echo: after")
    # and when the new socket leaves too, the disconnect policy applies
    await disconnect_and_wait_suspended(new, session_id)


async def test_resume_from_another_machine_is_refused_and_the_session_stays_suspended(alice):
    first = await connect(bearer(alice))
    created = await open_session(first, alice)
    session_id = created["session"]["id"]
    await disconnect_and_wait_suspended(first, session_id)
    # when another machine tries
    intruder = await connect(bearer(alice))
    refused = await intruder.request(
        "session-resume",
        {"sessionId": session_id, "fingerprint": {"machineId": "machine-b", "workingDir": "/x"}},
    )
    # then
    assert refused["data"]["code"] == 409
    assert refused["data"]["error"] == "fingerprint-mismatch"
    assert (await session_row(session_id)).status == SessionStatus.SUSPENDED
    await intruder.ws.disconnect()
    # and the original client can still resume it
    original = await connect(bearer(alice))
    resumed = await original.request(
        "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT}
    )
    assert resumed["type"] == "session-resumed"
    await original.ws.disconnect()


async def test_resume_from_another_directory_leaves_processes_suspended_with_drift(alice):
    first = await connect(bearer(alice))
    created = await open_session(first, alice)
    session_id, chat_id = created["session"]["id"], created["chatProcessId"]
    await disconnect_and_wait_suspended(first, session_id)
    second = await connect(bearer(alice))
    moved = {"machineId": "machine-a", "workingDir": "/home/a/elsewhere"}
    resumed = await second.request(
        "session-resume", {"sessionId": session_id, "fingerprint": moved}
    )
    assert resumed["data"]["session"]["status"] == "OPEN"
    [process] = resumed["data"]["processes"]
    assert (process["status"], process["contextDrift"]) == ("SUSPENDED", True)
    # the user decides: resume at their own risk clears the flag
    decided = await second.request("process-resume", {"processId": chat_id})
    assert decided["data"]["process"]["status"] == "IDLE"
    assert decided["data"]["process"]["contextDrift"] is False
    await second.ws.disconnect()


async def test_session_close_stops_all_processes(alice):
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    worker = await client.request("process-create", {"goal": "x", "thinkEngine": "ford"})
    closed = await client.request("session-close")
    assert closed["type"] == "session-closed"
    assert closed["data"]["session"]["status"] == "CLOSED"
    for public_id in (created["chatProcessId"], worker["data"]["process"]["id"]):
        row = await process_row(public_id)
        assert (row.status, row.close_reason) == ("CLOSED", "STOPPED")
    await client.ws.disconnect()


async def test_a_burst_of_steers_is_answered_in_order_and_a_bad_one_changes_nothing(alice, bob):
    bobs = await connect(bearer(bob))
    bob_chat = (await open_session(bobs, bob))["chatProcessId"]
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice))["chatProcessId"]
    paused = await client.request("process-pause", {"processId": chat_id})
    assert paused["data"]["process"]["status"] == "PAUSED"
    # when: 40 steers sent back to back without waiting, one of them to a foreign process
    for n in range(40):
        target = bob_chat if n == 17 else chat_id
        frame = {
            "type": "process-steer",
            "id": f"s{n}",
            "data": {"processId": target, "message": f"m{n}"},
        }
        await client.ws.send_to(text_data=json.dumps(frame))
    replies = [await client.next_reply() for _ in range(40)]
    # then: one reply per steer, in the order sent; the foreign one alone is refused
    assert [reply["replyTo"] for reply in replies] == [f"s{n}" for n in range(40)]
    assert replies[17]["type"] == "error"
    assert replies[17]["data"]["code"] == 404
    accepted = [reply for n, reply in enumerate(replies) if n != 17]
    assert [reply["data"]["pending"] for reply in accepted] == list(range(1, 40))
    assert {reply["data"]["processId"] for reply in accepted} == {chat_id}

    @database_sync_to_async
    def pending_texts(public_id: str) -> list[str]:
        rows = PendingMessage.objects.filter(process=process_row.__wrapped__(public_id))
        return [row.payload["text"] for row in rows.order_by("seq")]

    assert await pending_texts(chat_id) == [f"m{n}" for n in range(40) if n != 17]
    assert await pending_texts(bob_chat) == []
    # and a frame after the burst sees all of it applied
    detail = await client.request("process-get", {"processId": chat_id})
    assert detail["data"]["process"]["pending"] == 39
    await client.ws.disconnect()
    await bobs.ws.disconnect()


async def test_an_unexpected_failure_is_an_internal_error_and_the_socket_stays_open(
    alice, monkeypatch
):
    client = await connect(bearer(alice))
    chat_id = (await open_session(client, alice))["chatProcessId"]

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("processes.actions.steer.steer_many", broken)
    monkeypatch.setattr("processes.queries.get_readable_process", broken)
    # a failing steer (applied in a batch) and a failing request both get a 500 that hides
    # the cause from the client
    for kind, data in [
        ("process-steer", {"processId": chat_id, "message": "hello"}),
        ("process-get", {"processId": chat_id}),
    ]:
        reply = await client.request(kind, data)
        assert reply["type"] == "error", (kind, reply)
        assert reply["data"]["code"] == 500
        assert reply["data"]["message"] == "internal error; see the Brain's log"
    monkeypatch.undo()
    # and the socket still answers
    listed = await client.request("process-list")
    assert [process["id"] for process in listed["data"]["processes"]] == [chat_id]
    await client.ws.disconnect()


async def test_a_frame_for_a_socket_that_just_closed_is_dropped_not_raised():
    # given: a consumer whose client closed the socket while a handler was still answering
    # (daphne then refuses the send with autobahn's Disconnected)
    from autobahn.exception import Disconnected

    from gateway.consumer import BrainConsumer

    consumer = BrainConsumer()
    sent: list[dict[str, Any]] = []

    async def closed_socket(message: dict[str, Any]) -> None:
        sent.append(message)
        raise Disconnected("Attempt to send on a closed protocol")

    consumer.base_send = closed_socket
    # when / then: the handler carries on (so the disconnect policy still runs after it)
    await consumer.send(text_data='{"type": "event"}')
    assert sent == [{"type": "websocket.send", "text": '{"type": "event"}'}]


async def test_a_socket_closed_by_a_stopping_server_suspends_its_session_for_shutdown(
    alice, monkeypatch
):
    # given a session bound to a socket, and a server that has begun to stop (the brain
    # command's shutdown trigger runs before daphne closes the sockets)
    import threading

    from sessions_app import socket_bindings

    monkeypatch.setattr(socket_bindings, "_stopping", threading.Event())
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    socket_bindings.server_stopping()
    # when the socket closes
    await client.ws.disconnect()
    # then the session (and with the CLI's default, its chat) is suspended for the shutdown
    session = await session_row(created["session"]["id"])
    assert (session.status, session.suspend_cause) == (SessionStatus.SUSPENDED, "SHUTDOWN")
    chat = await process_row(created["chatProcessId"])
    assert chat.status == Status.SUSPENDED
