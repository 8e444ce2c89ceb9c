"""MCP through the official SDK, against the real mcp-server-time and mcp-server-git over stdio."""

from __future__ import annotations

import io
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engines.registry import get_engine
from processes.actions.create import create_process
from processes.capabilities.tools import toolbox_for
from processes.states import CloseReason, Status
from tests.support.tenancy import open_session
from tests.support.tools import project_recipe
from tests.support.waiting import closed_process
from vancetope.tools.checker import Classification
from vancetope.tools.mcp_client import close_mcp_connections, get_mcp_manager, server_errlog
from vancetope.tools.models import CallStatus, McpServer, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("mcp_connections")]

BIN = Path(sys.executable).parent


def server_command(name: str) -> str:
    command = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if command is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return command


def test_frankie_calls_get_current_time_on_mcp_server_time_and_reports_it(alice, llm):
    # given the real time server configured for alice's project
    McpServer.objects.create(
        project=alice.project, name="time", command=server_command("mcp-server-time")
    )
    project_recipe(alice, "frankie-time", allowed_tools_add=["get_current_time"])
    provider = llm(
        [
            {
                "match": "what time",
                "times": 1,
                "tool_calls": [{"name": "get_current_time", "arguments": {"timezone": "UTC"}}],
            }
        ]
    )
    session = open_session(alice)
    # when
    process = closed_process(
        create_process(session, goal="what time is it in UTC?", recipe="frankie-time").pk
    )
    # then the tool ran on the MCP server and its answer is in the final reply
    assert (process.status, process.close_reason) == (Status.CLOSED, CloseReason.DONE)
    assert provider.offered[0] == ["get_current_time"]
    call = ToolCall.objects.get(tool="get_current_time")
    assert call.status == CallStatus.OK
    returned = json.loads(call.result)
    assert returned["timezone"] == "UTC"
    assert returned["datetime"] in process.engine_state["result"]
    # and the parent report carries that result
    report = get_engine("frankie").summarize_for_parent(process, "DONE")
    assert returned["datetime"] in report.human_summary
    assert report.payload["outcome"] == "done"


def test_frankie_calls_git_status_on_mcp_server_git_and_reports_the_file(alice, llm, tmp_path):
    git = pytest.importorskip("git")
    repo = tmp_path / "repo"
    git.Repo.init(repo)
    (repo / "notes-for-frankie.txt").write_text("hello\n")
    McpServer.objects.create(
        project=alice.project, name="git", command=server_command("mcp-server-git")
    )
    project_recipe(alice, "frankie-git", allowed_tools_add=["git_status"])
    llm(
        [
            {
                "match": "status",
                "times": 1,
                "tool_calls": [{"name": "git_status", "arguments": {"repo_path": str(repo)}}],
            }
        ]
    )
    session = open_session(alice)
    # when
    process = closed_process(
        create_process(session, goal="what is the git status?", recipe="frankie-git").pk
    )
    # then
    assert (process.status, process.close_reason) == (Status.CLOSED, CloseReason.DONE)
    assert "notes-for-frankie.txt" in process.engine_state["result"]


def test_connections_are_reused_and_a_crashed_server_gives_a_tool_error(alice):
    # given a small MCP server whose `crash` tool kills it
    script = Path(__file__).parents[1] / "support" / "crashing_mcp_server.py"
    McpServer.objects.create(
        project=alice.project, name="crashy", command=sys.executable, args=[str(script)]
    )
    project_recipe(alice, "frankie-crashy", allowed_tools_add=["ping", "crash"])
    session = open_session(alice)
    process = create_process(session, recipe="frankie-crashy", start=False)
    tools = toolbox_for(process, [], lambda: None)
    assert tools.invoke("ping", {}).content == "pong"
    manager = get_mcp_manager()
    first = manager._connections[McpServer.objects.get().pk]
    assert toolbox_for(process, [], lambda: None).invoke("ping", {}).content == "pong"
    assert manager._connections[McpServer.objects.get().pk] is first  # reused
    # when the server dies mid-call
    crashed = tools.invoke("crash", {})
    # then the engine gets a tool error, classified by rule
    assert not crashed.ok
    assert crashed.classification == Classification.SERVER_CRASH
    assert "crashed or closed the connection" in crashed.error
    # and the next call starts the server again
    assert tools.invoke("ping", {}).content == "pong"


def test_a_server_that_cannot_start_leaves_its_tools_out_and_others_work(alice):
    McpServer.objects.create(
        project=alice.project,
        name="broken",
        command=sys.executable,
        args=["-c", "import sys; sys.exit(3)"],
    )
    McpServer.objects.create(
        project=alice.project, name="time", command=server_command("mcp-server-time")
    )
    project_recipe(alice, "frankie-any", allowed_tools_add=["*"])
    session = open_session(alice)
    process = create_process(session, recipe="frankie-any", start=False)
    pool = toolbox_for(process, [], lambda: None).pool()
    assert {"get_current_time", "convert_time"} <= set(pool)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_streamable_http_server_is_used_through_its_url(alice):
    # given the small server serving streamable HTTP
    script = Path(__file__).parents[1] / "support" / "crashing_mcp_server.py"
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(script), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP MCP server did not start"
                time.sleep(0.1)
        McpServer.objects.create(
            project=alice.project,
            name="remote",
            transport="http",
            url=f"http://127.0.0.1:{port}/mcp",
            tool_prefix="remote_",
        )
        project_recipe(alice, "frankie-remote", allowed_tools_add=["remote_*"])
        session = open_session(alice)
        process = create_process(session, recipe="frankie-remote", start=False)
        tools = toolbox_for(process, [], lambda: None)
        # then its tools are listed under the prefix and answer
        assert sorted(tools.pool()) == ["remote_crash", "remote_ping"]
        assert tools.invoke("remote_ping", {}).content == "pong"
    finally:
        close_mcp_connections()
        server.terminate()
        server.wait(timeout=10)


def test_a_stdio_server_gets_a_real_stderr_where_sys_stderr_is_a_stand_in(
    alice, monkeypatch: pytest.MonkeyPatch
):
    # given a process whose sys.stderr is an object with no file descriptor, as a Celery
    # worker's LoggingProxy is
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    # then a stdio server is given the process's own stderr, and starts and answers
    assert server_errlog() is sys.__stderr__
    McpServer.objects.create(
        project=alice.project,
        name="crashy",
        command=sys.executable,
        args=[str(Path(__file__).parents[1] / "support" / "crashing_mcp_server.py")],
    )
    is_error, text, _ = get_mcp_manager().call_tool(McpServer.objects.get(), "ping", {})
    assert (is_error, text) == (False, "pong")
