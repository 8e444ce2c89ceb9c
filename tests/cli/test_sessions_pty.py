"""`vance chat` and `vance sessions` in an 80-column pseudo-terminal against a real Brain on the
demo script: a thinking space started with `/space start`, a deep think whose question is
answered with `/answer`, `/inbox all`, a refusal named by its command, routine runs kept
quiet, and the chat listed by `vance sessions` and resumed from another directory."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.cli.terminal import Terminal
from tests.e2e.brain import Brain
from tests.support.vance_pty import Setup, login, vance_env

pytestmark = pytest.mark.embedded_brain

WIDTH = 80


def vance80(config_dir: Path, *args: str, cwd: Path) -> Terminal:
    env = {**vance_env(config_dir), "COLUMNS": str(WIDTH)}
    return Terminal([sys.executable, "-m", "vance", *args], cwd=cwd, env=env)


def too_wide(output: str) -> list[str]:
    return [line for line in output.splitlines() if len(line.rstrip()) > WIDTH]


def test_a_chat_on_the_demo_script_reads_well_in_80_columns_and_is_resumed_from_the_list(
    setup: Setup,
):
    env, _token, port, config_dir, work = setup
    brain = Brain({**env, "VANCETOPE_LLM_SCRIPT": "demo"}, port)
    chat: Terminal | None = None
    try:
        assert "demo: in a chat type `deep think`" in brain.log()
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        chat = vance80(config_dir, "chat", cwd=work)
        session_id = chat.expect(r"new session (sess_\d+)").group(1)
        chat.send_line("hello")
        chat.expect(r"demo script: no model is running")
        # a thinking space: the agent's three branches arrive as a tree
        chat.send_line("/space start")
        chat.expect(r"node_\d+ Venue and dates")
        chat.expect(r"node_\d+ Budget")
        # a refusal names the command, not the protocol's frame or field
        chat.send_line("/resume tp_99999")
        refused = chat.expect(r"/resume: [^\n]*")
        assert "process-resume" not in refused.group(0)
        assert "tp_99999" in refused.group(0)
        chat.send_line("/answer inb_x")
        chat.expect(r"usage: /answer inb_N")
        # a deep think asks in the inbox; the answer reaches it and it finishes
        chat.send_line("please do a deep think")
        item = chat.expect(r"inbox (inb_\d+) · QUESTION").group(1)
        chat.expect(r"budget per person")
        chat.send_line(f"/answer {item} 800 euros")
        chat.expect(r"The deep think is done", timeout=60)
        assert f"answered {item}" in chat.output
        # every item, whatever its status, in one table
        chat.send_line("/inbox all")
        table = chat.expect(r"Inbox: all \(\d+\)(.|\n)*?you ›").group(0)
        assert re.search(rf"{item}\s+QUESTION\s+ANSWERED", table)
        assert too_wide(table) == []
        chat.send_line("/quit")
        assert chat.wait() == 0
        # routine runs stay quiet
        assert not re.search(r"· run_\d+ user completed", chat.output)
        chat.close()
        chat = None

        # when the person lists their sessions
        listed = vance80(config_dir, "sessions", cwd=work)
        listed.expect(r"Your sessions")
        # the branches of its thinking space are chats too (newest first), then the chat itself
        listed.expect(r"sess_\d+\s+OPEN\s+here\s+[^\n]*branch “Venue and dates”")
        listed.expect(rf"{session_id}\s+\S+\s+here\s+[^\n]*please do a deep think")
        listed.expect(r"vance chat --session sess_\d+")
        assert listed.wait() == 0
        # (the hint below the table is prose: the terminal wraps it)
        assert too_wide(listed.output.split("Resume one:")[0]) == []
        listed.close()

        # then it resumes from another directory too
        elsewhere = work.parent / "elsewhere"
        elsewhere.mkdir()
        chat = vance80(config_dir, "chat", "--session", session_id, cwd=elsewhere)
        assert chat.expect(r"resumed session (sess_\d+)").group(1) == session_id
        chat.send_line("/quit")
        assert chat.wait() == 0
    finally:
        if chat is not None:
            chat.close()
        brain.stop()
