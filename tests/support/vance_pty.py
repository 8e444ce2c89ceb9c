"""The `vance` CLI under a pseudo-terminal against a Brain process: its environment, login,
the session it remembers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.cli.terminal import Terminal
from vance.config import SESSIONS_FILE

# Brain environment, token, port, vance config directory, working directory.
Setup = tuple[dict[str, str], str, int, Path, Path]


def vance_env(config_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "VANCE_CONFIG_DIR": str(config_dir),
        "VANCE_MACHINE_ID": "pty-test-machine",
        "TERM": "xterm-256color",
        "COLUMNS": "120",
    }


def vance(config_dir: Path, *args: str, cwd: Path) -> Terminal:
    return Terminal([sys.executable, "-m", "vance", *args], cwd=cwd, env=vance_env(config_dir))


def login(config_dir: Path, port: int, token_file: Path, work: Path) -> None:
    terminal = vance(
        config_dir,
        "login",
        "--server",
        f"http://127.0.0.1:{port}",
        "--token-file",
        str(token_file),
        cwd=work,
    )
    try:
        terminal.expect("Logged in to")
        assert terminal.wait() == 0
    finally:
        terminal.close()


def remembered_session(config_dir: Path) -> str:
    sessions = json.loads((config_dir / SESSIONS_FILE).read_text())
    (entry,) = sessions.values()
    return str(entry["sessionId"])
