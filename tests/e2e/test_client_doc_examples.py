"""The examples of docs/clients.md, run in order against a fresh Brain: its WebSocket example,
then every `curl` of its REST example, each answered with a 2xx."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.brain import ROOT, Brain, bootstrap, brain_env, free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.embedded_brain

CLIENTS = (ROOT / "docs" / "clients.md").read_text()


def block(heading: str, language: str) -> str:
    section = CLIENTS.split(heading, 1)[1]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def commands(script: str) -> list[str]:
    """The shell block's commands, continuation lines joined, comments left out."""
    joined = script.replace("\\\n", " ")
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip()]


def test_the_rest_examples_work_in_order_after_the_websocket_example(tmp_path: Path):
    var = tmp_path / "var"
    env = brain_env(var)
    token = bootstrap(env)
    brain = Brain(env, free_port())
    here = f"127.0.0.1:{brain.port}"
    try:
        # given: the WebSocket example, against this Brain
        websocket = block("### Chat over the WebSocket", "python")
        websocket = websocket.replace("127.0.0.1:8000", here)
        ran = subprocess.run(
            [sys.executable, "-c", websocket],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        assert "'role': 'assistant'" in ran.stdout
        wait_until(lambda: brain.get("/api/processes/tp_1", token)["status"] == "IDLE")
        # when: the REST example's commands, in order
        rest = commands(block("### REST", "sh"))
        assert rest[0] == "T=$(cat var/token)"
        assert len(rest) > 8
        for command in rest[1:]:
            assert command.startswith("curl ")
            line = "curl -fsS " + command.removeprefix("curl ").replace("localhost:8000", here)
            done = subprocess.run(
                ["bash", "-c", f"T=$(cat var/token); {line}"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            # then: each answers 2xx
            assert done.returncode == 0, f"{command}\n{done.stderr}{done.stdout}"

        # and they did what they say: the steer that waited while PAUSED was answered
        def answered() -> bool:
            detail = brain.get("/api/processes/tp_1", token)
            texts = [message.get("content") for message in detail["conversation"]]
            return "echo: focus on 2024" in texts

        wait_until(answered, timeout=20)
        created = brain.get("/api/processes/tp_2", token)
        assert (created["recipe"], created["status"]) == ("ford", "CLOSED")
        assert re.search(r"^sess_1$", created["sessionId"])
    finally:
        brain.stop()
