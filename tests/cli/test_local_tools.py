"""The local tools `vance chat` answers tool calls with: confined to the working directory,
MUTATING ones only after the user said yes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from vance.local_tools import (
    SAFETY,
    TOOL_SPECS,
    ToolError,
    Workspace,
    answer_tool_call,
)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def hello():\n    return 'hi'\n")
    (root / "notes.txt").write_text("first line\nTODO: write tests\n")
    (tmp_path / "secret.txt").write_text("outside")
    return Workspace(root)


class Asker:
    """A confirmation prompt that records what it was asked and answers `answer`."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> bool:
        self.asked.append((name, arguments))
        return self.answer


def test_every_tool_is_registered_with_a_schema_and_a_safety_class():
    names = [spec["name"] for spec in TOOL_SPECS]
    assert names == [
        "run_shell",
        "read_file",
        "write_file",
        "list_files",
        "search_files",
        "git_status",
        "git_diff",
        "git_log",
    ]
    assert {name for name, safety in SAFETY.items() if safety == "MUTATING"} == {
        "run_shell",
        "write_file",
    }
    assert all(spec["parameters"]["type"] == "object" for spec in TOOL_SPECS)


@pytest.mark.parametrize("escape", ["../secret.txt", "/etc/passwd", "src/../../secret.txt"])
def test_paths_outside_the_working_directory_are_refused(workspace: Workspace, escape: str):
    with pytest.raises(ToolError, match="outside the working directory"):
        workspace.call("read_file", {"path": escape})
    with pytest.raises(ToolError, match="outside the working directory"):
        workspace.call("write_file", {"path": escape, "content": "x"})
    with pytest.raises(ToolError, match="outside the working directory"):
        workspace.call("list_files", {"path": escape})


def test_a_symlink_pointing_outside_is_refused(workspace: Workspace):
    (workspace.root / "link").symlink_to(workspace.root.parent / "secret.txt")
    with pytest.raises(ToolError, match="outside the working directory"):
        workspace.call("read_file", {"path": "link"})


def test_read_write_list_and_search_inside_the_working_directory(workspace: Workspace):
    written = workspace.call("write_file", {"path": "out/result.md", "content": "# done\n"})
    assert written == {"path": "out/result.md", "bytes": 7, "appended": False}
    assert workspace.call("read_file", {"path": "out/result.md"})["content"] == "# done\n"

    listing = workspace.call("list_files", {"path": "."})
    assert [(e["path"], e["type"]) for e in listing["entries"]] == [
        ("notes.txt", "file"),
        ("out", "dir"),
        ("src", "dir"),
    ]
    deep = workspace.call("list_files", {"recursive": True})
    assert "src/app.py" in [e["path"] for e in deep["entries"]]

    found = workspace.call("search_files", {"pattern": r"TODO|hello"})
    assert [(m["path"], m["line"]) for m in found["matches"]] == [
        ("notes.txt", 2),
        ("src/app.py", 1),
    ]
    only_python = workspace.call("search_files", {"pattern": "TODO|hello", "glob": "*.py"})
    assert [m["path"] for m in only_python["matches"]] == ["src/app.py"]


def test_run_shell_runs_in_the_working_directory(workspace: Workspace):
    result = workspace.call("run_shell", {"command": "pwd; ls; exit 3"})
    assert result["exitCode"] == 3
    lines = result["stdout"].splitlines()
    assert lines[0] == str(workspace.root)
    assert "notes.txt" in lines


def test_bad_arguments_and_unknown_tools_are_tool_errors(workspace: Workspace):
    with pytest.raises(ToolError, match="bad arguments for read_file"):
        workspace.call("read_file", {"file": "notes.txt"})
    with pytest.raises(ToolError, match="unknown tool 'rm_rf'"):
        workspace.call("rm_rf", {})
    with pytest.raises(ToolError, match="bad regular expression"):
        workspace.call("search_files", {"pattern": "("})


@pytest.fixture
def repo(workspace: Workspace) -> Workspace:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=workspace.root, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "dev@example.test")
    git("config", "user.name", "Dev")
    git("add", ".")
    git("commit", "-q", "-m", "first commit")
    (workspace.root / "notes.txt").write_text("first line\nchanged\n")
    (workspace.root / "new.txt").write_text("untracked\n")
    return workspace


def test_git_tools_report_status_diff_and_log_of_the_working_directory(repo: Workspace):
    status = repo.call("git_status", {})["output"]
    assert " M notes.txt" in status
    assert "?? new.txt" in status

    diff = repo.call("git_diff", {})["output"]
    assert "-TODO: write tests" in diff
    assert "+changed" in diff
    assert repo.call("git_diff", {"staged": True})["output"] == ""

    log = repo.call("git_log", {"limit": 5})["output"]
    assert log.strip().endswith("Dev first commit")
    with pytest.raises(ToolError, match="outside the working directory"):
        repo.call("git_diff", {"path": "../secret.txt"})


def test_git_tools_outside_a_repository_say_so(tmp_path: Path):
    bare = Workspace(tmp_path)
    with pytest.raises(ToolError, match="not a git repository"):
        bare.call("git_status", {})


async def test_a_tool_call_frame_is_answered_with_a_tool_result(workspace: Workspace):
    # given: the tool-call event of docs/protocol.md
    call = {"callId": "call_7", "processId": "tp_3", "tool": "list_files", "arguments": {}}
    asker = Asker(answer=False)
    # when
    answer = await answer_tool_call(call, workspace, asker, assume_yes=False)
    # then: a SAFE_PROBE tool runs without asking
    assert asker.asked == []
    assert answer.data["callId"] == "call_7"
    assert answer.data["ok"] is True
    assert "notes.txt" in [e["path"] for e in answer.data["result"]["entries"]]


async def test_a_mutating_tool_runs_only_after_the_user_agrees(workspace: Workspace):
    call = {
        "callId": "call_8",
        "processId": "tp_3",
        "tool": "write_file",
        "arguments": {"path": "a.txt", "content": "x"},
    }
    declined = await answer_tool_call(call, workspace, Asker(answer=False), assume_yes=False)
    assert declined.data == {
        "callId": "call_8",
        "ok": False,
        "error": "the user declined to run write_file",
    }
    assert not (workspace.root / "a.txt").exists()

    asker = Asker(answer=True)
    agreed = await answer_tool_call(call, workspace, asker, assume_yes=False)
    assert asker.asked == [("write_file", {"path": "a.txt", "content": "x"})]
    assert agreed.ok
    assert (workspace.root / "a.txt").read_text() == "x"


async def test_yes_runs_mutating_tools_without_asking(workspace: Workspace):
    asker = Asker(answer=False)
    call = {"callId": "call_9", "tool": "run_shell", "arguments": {"command": "echo hi"}}
    answer = await answer_tool_call(call, workspace, asker, assume_yes=True)
    assert asker.asked == []
    assert answer.data["result"]["stdout"] == "hi\n"


async def test_a_refused_path_is_reported_in_the_tool_result(workspace: Workspace):
    call = {"callId": "call_10", "tool": "read_file", "arguments": {"path": "../secret.txt"}}
    answer = await answer_tool_call(call, workspace, Asker(answer=True), assume_yes=False)
    assert answer.data["ok"] is False
    assert "outside the working directory" in answer.data["error"]
    assert "result" not in answer.data
