"""The Brain as a user runs it: `manage.py brain` in its own OS process, real sockets."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.brain import (
    Brain,
    CeleryWorker,
    bootstrap,
    brain_env,
    distributed_env,
    free_port,
    last_line,
    manage_shell,
    needs_services,
)
from tests.support.openai_stub import OpenAIStubServer
from tests.support.waiting import wait_until

FINGERPRINT = {"machineId": "e2e-machine", "workingDir": "/srv/e2e"}


@pytest.mark.crash
def test_chat_through_the_real_openai_client_survives_a_restart(tmp_path: Path):
    with OpenAIStubServer() as stub:
        env = brain_env(tmp_path, VANCETOPE_LLM="openai", OPENAI_BASE_URL=stub.base_url)
        token = bootstrap(env)
        port = free_port()
        brain = Brain(env, port)
        try:
            assert "LLM: openai-compatible" in brain.log()
            client = brain.socket(token)
            created = client.request(
                "session-create",
                {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
            )
            session_id = created["data"]["session"]["id"]
            chat_id = created["data"]["chatProcessId"]
            client.request("chat", {"text": "hello"})
            reply = client.event("chat-message", role="assistant")
            assert reply["data"]["text"] == "echo: hello"
            deltas = [e for e in client.events if e["event"] == "chat-delta"]
            assert len(deltas) >= 2
            # the real openai client streamed from the stub
            sent = stub.requests[-1]
            assert sent["stream"] is True
            assert sent["messages"][-1] == {"role": "user", "content": "hello"}
            client.close()
        finally:
            code = brain.stop()
        assert code == 0, brain.log()
        assert "Brain stopped." in brain.log()

        # after a restart the process and its conversation are intact
        brain = Brain(env, port)
        try:
            detail = brain.get(f"/api/processes/{chat_id}", token)
            contents = [(m["role"], m["content"]) for m in detail["conversation"]]
            assert contents == [("user", "hello"), ("assistant", "echo: hello")]
            assert detail["status"] == "SUSPENDED"
            # and the same client resumes its session and chats on
            client = brain.socket(token)
            resumed = client.request(
                "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT}
            )
            assert resumed["type"] == "session-resumed", resumed
            assert [p["status"] for p in resumed["data"]["processes"]] == ["IDLE"]
            client.request("chat", {"text": "again"})
            assert client.event("chat-message", role="assistant")["data"]["text"] == "echo: again"
            client.close()
        finally:
            assert brain.stop() == 0, brain.log()


@needs_services
def test_distributed_brain_with_a_separate_celery_worker_answers_chat(tmp_path, scratch_database):
    env, queue = distributed_env(tmp_path, scratch_database, "e2e")
    token = bootstrap(env)
    worker = CeleryWorker(env, queue)
    brain = Brain(env, free_port())
    try:
        health = brain.wait_healthy()
        assert health["checks"]["broker"]["detail"] == "redis"
        assert "runtime: distributed" in brain.log()
        client = brain.socket(token)
        client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        client.request("chat", {"text": "over redis"})
        reply = client.event("chat-message", role="assistant")
        assert reply["data"]["text"] == "echo: over redis"
        client.close()
    finally:
        brain.stop()
        worker.stop()
    assert "processes.drive_lane" in worker.log(), worker.log()


def test_fingerprint_policy_over_a_real_websocket(tmp_path: Path):
    env = brain_env(tmp_path)
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        first = brain.socket(token)
        created = first.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        session_id = created["data"]["session"]["id"]
        first.close()  # onDisconnect SUSPEND (the cli default)
        wait_until(lambda: brain.get(f"/api/sessions/{session_id}", token)["status"] == "SUSPENDED")

        # another machine: refused, the session stays suspended
        other = brain.socket(token)
        refused = other.request(
            "session-resume",
            {"sessionId": session_id, "fingerprint": {"machineId": "intruder", "workingDir": "/"}},
        )
        assert refused["data"]["code"] == 409
        assert refused["data"]["error"] == "fingerprint-mismatch"
        other.close()
        assert brain.get(f"/api/sessions/{session_id}", token)["status"] == "SUSPENDED"

        # same machine, other directory: resumed, processes stay suspended with drift
        moved = brain.socket(token)
        drifted = moved.request(
            "session-resume",
            {"sessionId": session_id, "fingerprint": {**FINGERPRINT, "workingDir": "/elsewhere"}},
        )
        assert drifted["data"]["session"]["status"] == "OPEN"
        assert [(p["status"], p["contextDrift"]) for p in drifted["data"]["processes"]] == [
            ("SUSPENDED", True)
        ]
        moved.close()

        wait_until(lambda: brain.get(f"/api/sessions/{session_id}", token)["status"] == "SUSPENDED")
        # the original client (identical fingerprint, after the moved one suspended it again)
        original = brain.socket(token)
        resumed = original.request(
            "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT}
        )
        assert resumed["data"]["session"]["status"] == "OPEN"
        statuses = [p["status"] for p in resumed["data"]["processes"]]
        assert statuses == ["IDLE"]
        original.close()
    finally:
        assert brain.stop() == 0, brain.log()


@pytest.mark.embedded_brain
def test_a_brain_stopped_while_a_socket_is_open_exits_0(tmp_path: Path):
    # given a Brain with a client bound to a session (its consumer waits on the channel layer)
    env = brain_env(tmp_path)
    token = bootstrap(env)
    brain = Brain(env, free_port())
    client = brain.socket(token)
    try:
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        assert created["type"] == "session-created"
        client.request("chat", {"text": "hello"})
        assert client.event("chat-message", role="assistant")["data"]["text"] == "echo: hello"
        # when it is stopped with SIGTERM while the socket is still open
        code = brain.stop()
    finally:
        client.close()
    # then it stops cleanly: the consumer's task unwinds before the interpreter ends (a task
    # left suspended on the server's loop crashed it with SIGSEGV at exit)
    assert code == 0, brain.log()
    assert "Brain stopped." in brain.log()
    # and the session it held, with every process of it (the CLI's default), was suspended
    # for the shutdown, not as if the client had left
    session_pk = int(created["data"]["session"]["id"].removeprefix("sess_"))
    found = manage_shell(
        env,
        "from sessions_app.models import Session; "
        f"s = Session.objects.get(pk={session_pk}); "
        "statuses = sorted(set(s.processes.values_list('status', flat=True))); "
        "print(s.status, s.suspend_cause, statuses)",
    )
    assert last_line(found) == "SUSPENDED SHUTDOWN ['SUSPENDED']"
