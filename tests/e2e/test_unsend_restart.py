"""A message withdrawn with `process-unsend` is never answered, also when the Brain (its own OS
process, real sockets, the real openai client against a local OpenAI-compatible server) is
stopped and started again between the unsend and the lane."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port
from tests.support.openai_stub import OpenAIStubServer

FINGERPRINT = {"machineId": "e2e-unsend", "workingDir": "/srv/unsend"}


def sent_to_llm(stub: OpenAIStubServer) -> list[str]:
    return [m["content"] for body in stub.requests for m in body["messages"] if m["role"] == "user"]


@pytest.mark.crash
def test_an_unsent_message_is_not_answered_after_a_restart(tmp_path: Path):
    with OpenAIStubServer() as stub:
        env = brain_env(tmp_path, VANCETOPE_LLM="openai", OPENAI_BASE_URL=stub.base_url)
        token = bootstrap(env)
        port = free_port()
        brain = Brain(env, port)
        try:
            client = brain.socket(token)
            created = client.request(
                "session-create",
                {
                    "clientType": "cli",
                    "projectId": "proj_default",
                    "fingerprint": FINGERPRINT,
                    "recipe": "ford",
                },
            )
            session_id = created["data"]["session"]["id"]
            chat_id = created["data"]["chatProcessId"]
            # given a message that waits (the chat is paused)
            assert client.request("process-pause", {"processId": chat_id})["type"] == (
                "process-paused"
            )
            accepted = client.request("chat", {"text": "never mind"})
            seq = accepted["data"]["seq"]
            # when it is unsent
            unsent = client.request("process-unsend", {"processId": chat_id, "seq": seq})
            assert unsent["data"] == {"processId": chat_id, "seq": seq}
            client.close()
        finally:
            assert brain.stop() == 0, brain.log()

        # and the Brain restarts, and the person resumes and chats on
        brain = Brain(env, port)
        try:
            client = brain.socket(token)
            resumed = client.request(
                "session-resume", {"sessionId": session_id, "fingerprint": FINGERPRINT}
            )
            assert resumed["type"] == "session-resumed", resumed
            status = resumed["data"]["processes"][0]["status"]
            if status != "IDLE":
                client.request("process-resume", {"processId": chat_id})
            client.request("chat", {"text": "hello"})
            assert client.event("chat-message", role="assistant")["data"]["text"] == "echo: hello"
            client.close()
            # then the withdrawn message was never answered, nor sent to the LLM
            detail = brain.get(f"/api/processes/{chat_id}", token)
            contents = [m["content"] for m in detail["conversation"]]
            assert contents == ["hello", "echo: hello"]
            assert detail["pending"] == 0
            assert sent_to_llm(stub) == ["hello"]
        finally:
            assert brain.stop() == 0, brain.log()
