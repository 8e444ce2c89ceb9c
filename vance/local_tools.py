"""The tools `vance chat` offers the Brain, run on this machine inside the working directory.

Every path is resolved (symlinks included) and refused unless it lies inside the working
directory. MUTATING tools (run_shell, write_file) run only after the user confirms, unless
`--yes`. run_shell starts in the working directory; what the command itself does is up to the
user who confirms it.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAFE_PROBE = "SAFE_PROBE"
MUTATING = "MUTATING"
# Results travel in one WebSocket frame; the Brain refuses frames over 1 MiB.
MAX_OUTPUT_CHARS = 200_000
MAX_READ_BYTES = 512 * 1024
MAX_LIST_ENTRIES = 1000
MAX_SEARCH_MATCHES = 200
SKIPPED_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache"}


class ToolError(Exception):
    pass


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }


PATH = {"type": "string", "description": "a path relative to the working directory"}

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "run_shell",
        "description": "Run a shell command in the working directory (exit code, stdout, stderr).",
        "parameters": _schema(
            {
                "command": {"type": "string"},
                "timeout": {"type": "integer", "minimum": 1, "maximum": 600, "default": 60},
            },
            ["command"],
        ),
        "safety": MUTATING,
    },
    {
        "name": "read_file",
        "description": "Read a text file in the working directory.",
        "parameters": _schema({"path": PATH}, ["path"]),
        "safety": SAFE_PROBE,
    },
    {
        "name": "write_file",
        "description": "Write (or append to) a text file in the working directory.",
        "parameters": _schema(
            {"path": PATH, "content": {"type": "string"}, "append": {"type": "boolean"}},
            ["path", "content"],
        ),
        "safety": MUTATING,
    },
    {
        "name": "list_files",
        "description": "List a directory of the working directory (recursively if asked).",
        "parameters": _schema({"path": PATH, "recursive": {"type": "boolean"}}),
        "safety": SAFE_PROBE,
    },
    {
        "name": "search_files",
        "description": "Search text files for a regular expression; returns matching lines.",
        "parameters": _schema(
            {"pattern": {"type": "string"}, "path": PATH, "glob": {"type": "string"}},
            ["pattern"],
        ),
        "safety": SAFE_PROBE,
    },
    {
        "name": "git_status",
        "description": "git status of the working directory.",
        "parameters": _schema({}),
        "safety": SAFE_PROBE,
    },
    {
        "name": "git_diff",
        "description": "git diff of the working directory (or one path); staged if asked.",
        "parameters": _schema({"path": PATH, "staged": {"type": "boolean"}}),
        "safety": SAFE_PROBE,
    },
    {
        "name": "git_log",
        "description": "Recent commits touching the working directory (or one path).",
        "parameters": _schema(
            {"path": PATH, "limit": {"type": "integer", "minimum": 1, "maximum": 200}}
        ),
        "safety": SAFE_PROBE,
    },
]
SAFETY = {spec["name"]: spec["safety"] for spec in TOOL_SPECS}


def _clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n… [{len(text) - MAX_OUTPUT_CHARS} more characters cut]"


class Workspace:
    """The working directory the tools are confined to."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, relative: str | None) -> Path:
        """The absolute path of `relative`, refused when it leaves the working directory."""
        candidate = (self.root / (relative or ".")).resolve()
        if candidate != self.root and not candidate.is_relative_to(self.root):
            raise ToolError(f"{relative!r} is outside the working directory {self.root}")
        return candidate

    def show(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    # --- tools -----------------------------------------------------------------------------------

    def run_shell(self, command: str, timeout: int = 60) -> dict[str, Any]:
        try:
            done = subprocess.run(
                command,
                shell=True,
                cwd=self.root,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ToolError(f"command timed out after {timeout}s") from exc
        return {
            "exitCode": done.returncode,
            "stdout": _clip(done.stdout),
            "stderr": _clip(done.stderr),
        }

    def read_file(self, path: str) -> dict[str, Any]:
        target = self.resolve(path)
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file")
        with target.open("rb") as handle:
            raw = handle.read(MAX_READ_BYTES + 1)
        if b"\0" in raw[:8192]:
            raise ToolError(f"{path!r} looks binary; not read")
        return {
            "path": self.show(target),
            "content": raw[:MAX_READ_BYTES].decode("utf-8", errors="replace"),
            "truncated": len(raw) > MAX_READ_BYTES,
        }

    def write_file(self, path: str, content: str, append: bool = False) -> dict[str, Any]:
        target = self.resolve(path)
        if target == self.root or target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a" if append else "w", encoding="utf-8") as handle:
            handle.write(content)
        return {"path": self.show(target), "bytes": len(content.encode()), "appended": append}

    def list_files(self, path: str = ".", recursive: bool = False) -> dict[str, Any]:
        base = self.resolve(path)
        if not base.is_dir():
            raise ToolError(f"{path!r} is not a directory")
        entries: list[dict[str, Any]] = []
        for item in self._walk(base) if recursive else sorted(base.iterdir()):
            if len(entries) >= MAX_LIST_ENTRIES:
                return {"path": self.show(base), "entries": entries, "truncated": True}
            is_dir = item.is_dir()
            entries.append(
                {
                    "path": item.relative_to(self.root).as_posix(),
                    "type": "dir" if is_dir else "file",
                    "size": None if is_dir else item.lstat().st_size,
                }
            )
        return {"path": self.show(base), "entries": entries, "truncated": False}

    def _walk(self, base: Path) -> list[Path]:
        found: list[Path] = []
        for directory, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            here = Path(directory)
            found.extend(here / name for name in dirs)
            found.extend(here / name for name in sorted(files))
            if len(found) > MAX_LIST_ENTRIES:
                break
        return found

    def search_files(self, pattern: str, path: str = ".", glob: str = "*") -> dict[str, Any]:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"bad regular expression {pattern!r}: {exc}") from exc
        base = self.resolve(path)
        files = [base] if base.is_file() else [p for p in self._walk(base) if p.is_file()]
        matches: list[dict[str, Any]] = []
        for file in files:
            if not file.match(glob) or not file.resolve().is_relative_to(self.root):
                continue
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # binary or unreadable: not searchable text
            for number, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    matches.append({"path": self.show(file), "line": number, "text": line[:500]})
                    if len(matches) >= MAX_SEARCH_MATCHES:
                        return {"matches": matches, "truncated": True}
        return {"matches": matches, "truncated": False}

    def _git(self, *args: str) -> dict[str, Any]:
        try:
            done = subprocess.run(
                ["git", "--no-pager", "-c", "color.ui=never", *args],
                cwd=self.root,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=60,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except FileNotFoundError as exc:
            raise ToolError("git is not installed") from exc
        except subprocess.TimeoutExpired as exc:
            raise ToolError("git timed out") from exc
        if done.returncode != 0:
            raise ToolError(done.stderr.strip() or f"git exited with {done.returncode}")
        return {"output": _clip(done.stdout)}

    def git_status(self) -> dict[str, Any]:
        # "-- ." keeps the answer inside the working directory even in a larger repository.
        return self._git("status", "--short", "--branch", "--", ".")

    def git_diff(self, path: str = ".", staged: bool = False) -> dict[str, Any]:
        target = str(self.resolve(path))
        return self._git("diff", *(["--staged"] if staged else []), "--", target)

    def git_log(self, path: str = ".", limit: int = 20) -> dict[str, Any]:
        target = str(self.resolve(path))
        return self._git(
            "log", f"-n{int(limit)}", "--format=%h %ad %an %s", "--date=short", "--", target
        )

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name not in SAFETY:
            raise ToolError(f"unknown tool {name!r}")
        try:
            result: dict[str, Any] = getattr(self, name)(**arguments)
        except TypeError as exc:
            raise ToolError(f"bad arguments for {name}: {exc}") from exc
        except OSError as exc:
            raise ToolError(f"{name} failed: {exc.strerror or exc}") from exc
        return result


Confirm = Callable[[str, dict[str, Any]], Awaitable[bool]]


@dataclass
class ToolAnswer:
    """The `tool-result` data for one `tool-call` event."""

    data: dict[str, Any]

    @property
    def ok(self) -> bool:
        return bool(self.data["ok"])


async def answer_tool_call(
    call: dict[str, Any], workspace: Workspace, confirm: Confirm, *, assume_yes: bool
) -> ToolAnswer:
    """Run the tool a `tool-call` event asks for and build the `tool-result` data."""
    call_id = str(call.get("callId") or "")
    name = str(call.get("tool") or "")
    arguments = call.get("arguments") or {}
    if not isinstance(arguments, dict):
        return ToolAnswer({"callId": call_id, "ok": False, "error": "arguments must be an object"})
    if SAFETY.get(name) == MUTATING and not assume_yes and not await confirm(name, arguments):
        return ToolAnswer(
            {"callId": call_id, "ok": False, "error": f"the user declined to run {name}"}
        )
    try:
        result = await asyncio.to_thread(workspace.call, name, arguments)
    except ToolError as exc:
        return ToolAnswer({"callId": call_id, "ok": False, "error": str(exc)})
    return ToolAnswer({"callId": call_id, "ok": True, "result": result})
