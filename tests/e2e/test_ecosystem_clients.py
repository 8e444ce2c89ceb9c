"""Tools nobody here wrote, against the Brain as a user runs it (`manage.py brain`, its own OS
process, daphne): the MCP Inspector's CLI (npm) lists the tools at /mcp, and the `a2a-sdk`'s
client talks to an agent a project published over REST."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from a2a.types.a2a_pb2 import TaskState

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port
from tests.support.a2a_brain import a2a_client, rpc, user_message

# The Inspector release the check runs (npm); its CLI passes headers with --header.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
MCP_TOOLS = {
    "process_create",
    "process_list",
    "process_get",
    "process_steer",
    "process_pause",
    "process_resume",
    "process_stop",
    "inbox_list",
    "inbox_answer",
    "workflow_run",
    "memory_search",
}
# What npm says when it cannot fetch a package: the check is skipped, not failed.
UNREACHABLE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "E404", "ENETUNREACH")


@pytest.fixture
def brain(tmp_path: Path):
    env = brain_env(tmp_path)
    token = bootstrap(env)
    running = Brain(env, free_port())
    try:
        yield running, token
    finally:
        running.stop()


def inspector(*args: str) -> subprocess.CompletedProcess[str]:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx (Node.js) is not installed: the MCP Inspector CLI cannot run")
    done = subprocess.run(
        [npx, "--yes", INSPECTOR, "--cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 and any(code in done.stderr for code in UNREACHABLE):
        pytest.skip(f"npm could not fetch {INSPECTOR}: {done.stderr.strip()[-300:]}")
    return done


@pytest.mark.inspector
def test_the_mcp_inspector_cli_lists_the_tools_of_a_running_brain(brain):
    running, token = brain
    # when the Inspector's CLI lists the tools at /mcp with the API token as a header
    url = f"{running.url}/mcp"
    listed = inspector(
        url,
        "--transport",
        "http",
        "--method",
        "tools/list",
        "--header",
        f"Authorization: Bearer {token}",
    )
    # and without it
    refused = inspector(url, "--transport", "http", "--method", "tools/list")
    # then it lists every tool; without the token it is refused (the Inspector reads the 401's
    # WWW-Authenticate and asks for an OAuth login, which a run without a terminal cannot do)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert {tool["name"] for tool in json.loads(listed.stdout)["tools"]} == MCP_TOOLS
    assert refused.returncode != 0
    assert "auth_required" in refused.stdout + refused.stderr


def test_the_a2a_sdk_client_talks_to_an_agent_a_project_published(brain):
    running, token = brain
    project = "proj_default"  # what `manage.py bootstrap` provisions
    # given ford published as an agent of the project, over REST
    status, recipe = running.post(
        "/api/recipes",
        token,
        {"name": "ford", "engine": "ford", "scope": "project", "projectId": project, "a2a": True},
    )
    assert (status, recipe["a2a"]) == (201, True)
    agent = f"{running.url}/a2a/{project}/ford"

    async def talk():
        async with a2a_client(agent, token) as (client, card):
            # when the SDK's client streams a message to it
            events = [e async for e in client.send_message(user_message("hello"))]
        return card, events

    card, events = asyncio.run(talk())
    task_id = events[0].task.id
    # and a plain 0.3 client reads the task
    got = rpc(agent, token, "tasks/get", {"id": task_id, "historyLength": 5}).json()["result"]
    # then the card named the agent, the stream ended waiting for input with the answer
    assert card.skills[0].id == "ford"
    last = events[-1].status_update.status
    assert last.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert last.message.parts[0].text == "echo: hello"
    # and the 0.3 task says the same, with the conversation as history
    assert got["status"]["state"] == "input-required"
    assert [m["parts"][0]["text"] for m in got["history"]] == ["hello", "echo: hello"]
    # and the agent is not there for a request without the token
    assert httpx.get(f"{agent}/.well-known/agent-card.json").status_code == 401
