"""An inbox answer, once accepted, reaches the process that asked, whatever happened to the
processes between it and the person: a chat starts a deep think that asks a QUESTION, the
chat's client goes away (its session and both processes SUSPENDED), the person answers from
another client, and, after the first one comes back (with a Brain restart in between, too),
the deep think gets the answer and finishes. Before the fix the chat said "I could not pass
your answer on: … it is SUSPENDED" and the deep think stayed BLOCKED for ever.

A real `manage.py brain` over HTTP and WebSocket (the whole ASGI stack)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.brain import Brain, BrainSocket, bootstrap, brain_env, free_port, poll

FINGERPRINT = {"machineId": "inbox-machine", "workingDir": "/srv/inbox"}
SCRIPT = [
    {
        "engine": "arthur",
        "match": "^chart the rings$",
        "times": 1,
        "tool_calls": [
            {
                "name": "process_create",
                "arguments": {
                    "recipe": "deep-think",
                    "goal": "chart the rings",
                    "params": {
                        "tasks": [
                            {"kind": "USER_INPUT", "title": "Colour", "goal": "Which colour?"},
                            {"kind": "AGGREGATE", "title": "Report"},
                        ]
                    },
                },
            }
        ],
    },
    {"engine": "arthur", "match": "^chart the rings$", "reply": "On it."},
    {"engine": "arthur", "match": r"^\[report from", "reply": "Done: a blue chart."},
    {"engine": "marvin", "step": "aggregate", "reply": "A blue chart."},
]


def assistant_said(brain: Brain, token: str, process_id: str) -> list[str]:
    conversation = brain.get(f"/api/processes/{process_id}", token)["conversation"]
    return [m["content"] for m in conversation if m["role"] == "assistant"]


def open_client(brain: Brain, token: str) -> tuple[BrainSocket, str]:
    client = brain.socket(token)
    created = client.request(
        "session-create",
        {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
    )
    return client, created["data"]["session"]["id"]


@pytest.mark.crash
@pytest.mark.parametrize("restart", [False, True], ids=["same-brain", "brain-restarted"])
def test_an_answer_given_while_the_asking_chat_is_suspended_reaches_the_deep_think(
    tmp_path: Path, restart: bool
) -> None:
    # given a chat whose deep think asked a question, now in the inbox
    rules = tmp_path / "script.yaml"
    rules.write_text(yaml.safe_dump(SCRIPT))
    env = brain_env(tmp_path, VANCETOPE_LLM_SCRIPT=str(rules), VANCETOPE_LEASE_SECONDS="3")
    token = bootstrap(env)
    port = free_port()
    brain = Brain(env, port)
    try:
        first, session_id = open_client(brain, token)
        first.request("chat", {"text": "chart the rings"})

        def question() -> dict[str, Any] | None:
            items = brain.get("/api/inbox?status=OPEN", token)["results"]
            return next((item for item in items if item["kind"] == "QUESTION"), None)

        item = poll(question, timeout=30)
        [marvin] = brain.get("/api/processes?engine=marvin", token)["results"]
        # when its client goes away: the session and its processes are suspended
        first.close()
        poll(
            lambda: brain.get(f"/api/sessions/{session_id}", token)["status"] == "SUSPENDED",
            timeout=30,
        )
        # and the person answers from another client
        second, _ = open_client(brain, token)
        answered = second.request(
            "inbox-answer", {"itemId": item["id"], "answer": {"text": "blue"}}
        )
        assert answered["type"] == "inbox-answered", answered
        assert answered["data"]["delivered"] is True
        # and there resumes the chat alone, which passes the answer on to the deep think
        # while that is still SUSPENDED
        chat_id = brain.get(f"/api/sessions/{session_id}", token)["chatProcessId"]
        before = len(assistant_said(brain, token, chat_id))
        resumed_chat = second.request("process-resume", {"processId": chat_id})
        assert resumed_chat["type"] == "process-resumed", resumed_chat
        poll(lambda: len(assistant_said(brain, token, chat_id)) > before, timeout=30)
        second.close()
        if restart:
            assert brain.stop() == 0, brain.log()
            brain = Brain(env, port)
        # and the first client comes back
        back = brain.socket(token)
        resumed = back.request(
            "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT}
        )
        assert resumed["type"] == "session-resumed", resumed
        # then the deep think got the answer and finished, and the chat says so
        done = poll(
            lambda: (
                (row := brain.get(f"/api/processes/{marvin['id']}", token))["status"] == "CLOSED"
                and row
            ),
            timeout=60,
        )
        assert done["closeReason"] == "DONE", done
        assert done["taskTree"]["nodes"][1]["status"] == "DONE"
        chat = brain.get(f"/api/sessions/{session_id}", token)
        conversation = brain.get(f"/api/processes/{chat['chatProcessId']}", token)["conversation"]
        said = [m["content"] for m in conversation if m["role"] == "assistant"]
        assert not any("could not pass your answer on" in text for text in said), said
        poll(
            lambda: (
                "Done: a blue chart."
                in [
                    m["content"]
                    for m in brain.get(f"/api/processes/{chat['chatProcessId']}", token)[
                        "conversation"
                    ]
                ]
            ),
            timeout=30,
        )
        back.close()
    finally:
        code = brain.stop()
    assert code == 0, brain.log()
