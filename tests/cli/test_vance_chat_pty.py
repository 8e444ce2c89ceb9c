"""`vance chat` in a pseudo-terminal against a real Brain (its own OS process), as a person
would use it: type, watch the streamed reply, survive a Brain restart, answer tool calls."""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.cli.terminal import Terminal
from tests.e2e.brain import Brain
from tests.support.markdown_sample import SATURN_REPORT
from tests.support.vance_pty import Setup, login, remembered_session, vance, vance_env
from vance.config import CONFIG_FILE

pytestmark = pytest.mark.embedded_brain


@pytest.mark.crash
def test_chat_streams_the_reply_and_resumes_its_session_after_a_brain_restart(setup: Setup):
    env, token, port, config_dir, work = setup
    brain = Brain(env, port)
    chat: Terminal | None = None
    try:
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        assert oct((config_dir / CONFIG_FILE).stat().st_mode & 0o777) == "0o600"

        # given: a chat in this working directory
        chat = vance(config_dir, "chat", cwd=work)
        session_id = chat.expect(r"new session (sess_\d+)").group(1)
        # when: a message is sent, then the streamed echo comes back
        chat.send_line("hello")
        chat.expect(r"brain › echo: hello")
        assert remembered_session(config_dir) == session_id

        # when the Brain restarts (SIGTERM, then again on the same port and var dir); its exit
        # code is test_brain_process's business, this test is about the client
        brain.stop()
        chat.expect("Connection to the Brain lost; reconnecting")
        brain = Brain(env, port)
        # then the running chat reconnects to the same session and chats on
        resumed = chat.expect(r"resumed session (sess_\d+)  chat process tp_\d+  \(reconnected")
        assert resumed.group(1) == session_id
        chat.send_line("again")
        chat.expect(r"brain › echo: again")
        # nothing shown twice across the reconnect (before it, a terminal draws the streaming
        # answer more than once: vance/prose.py's LiveAnswer)
        assert "echo: hello" not in chat.output[resumed.end() :]
        chat.send_line("/quit")
        assert chat.wait() == 0
        chat.close()

        # and a new `vance chat` in the same directory resumes the remembered session
        chat = vance(config_dir, "chat", cwd=work)
        assert chat.expect(r"resumed session (sess_\d+)").group(1) == session_id
        chat.send_line("third")
        chat.expect(r"brain › echo: third")
        chat.send_line("/quit")
        assert chat.wait() == 0
        assert remembered_session(config_dir) == session_id
        detail = brain.get(f"/api/sessions/{session_id}", token)
        assert detail["fingerprint"]["machineId"] == "pty-test-machine"
        assert detail["fingerprint"]["workingDir"] == str(work.resolve())
        assert detail["clientType"] == "cli"
    finally:
        if chat is not None:
            chat.close()
        brain.stop()


TOOL_SCRIPT = """\
- match: "which files"
  tool_calls:
    - name: list_files
      arguments: {path: "."}
  times: 1
- match: "take a note"
  tool_calls:
    - name: write_file
      arguments: {path: "notes/todo.txt", content: "buy milk"}
  times: 1
- match: "escape"
  tool_calls:
    - name: read_file
      arguments: {path: "../var/token"}
  times: 1
"""


def create_recipe(brain: Brain, token: str, name: str, tools: list[str]) -> None:
    """A chat recipe whose engine (frankie) may call these tools."""
    body = {
        "name": name,
        "engine": "frankie",
        "scope": "project",
        "projectId": "proj_default",
        "allowedToolsAdd": tools,
    }
    request = urllib.request.Request(
        f"{brain.url}/api/recipes",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201


def test_chat_answers_the_brains_list_files_call_from_the_working_directory(
    setup: Setup, tmp_path: Path
):
    env, token, port, config_dir, work = setup
    script = tmp_path / "script.yaml"
    script.write_text(TOOL_SCRIPT)
    brain = Brain({**env, "VANCETOPE_LLM_SCRIPT": str(script)}, port)
    chat: Terminal | None = None
    try:
        create_recipe(brain, token, "cli-files", ["list_files", "read_file", "write_file"])
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        chat = vance(config_dir, "chat", "--recipe", "cli-files", cwd=work)
        chat.expect(r"new session (sess_\d+)")
        chat.send_line("which files are here?")
        # the Brain calls list_files; the CLI runs it here (a SAFE_PROBE: no question asked)
        chat.expect(r"calls list_files\(\{\"path\": \"\.\"\}\)")
        chat.expect(r"list_files → ok")
        chat.expect(r"brain › echo: which files are here\?")
        assert "Allow" not in chat.output

        # a MUTATING tool asks first; the typed answer goes to the question, not the chat
        chat.send_line("take a note")
        chat.expect(r"Allow write_file\? \[y/N\]")
        chat.send_line("y")
        chat.expect(r"write_file → ok")
        chat.expect(r"brain › echo: take a note")
        assert (work / "notes" / "todo.txt").read_text() == "buy milk"

        # a path outside the working directory is refused in the tool-result
        chat.send_line("escape")
        chat.expect(r"read_file → refused: '\.\./var/token' is outside the working directory")
        chat.expect(r"brain › echo: escape")
        chat.send_line("/quit")
        assert chat.wait() == 0

        # the Brain got the listing of the working directory as the tool's result
        chat_process = brain.get("/api/processes?session=" + remembered_session(config_dir), token)
        process_id = chat_process["results"][0]["id"]
        detail = brain.get(f"/api/processes/{process_id}", token)
        tool_messages = [m for m in detail["conversation"] if m["role"] == "tool"]
        assert len(tool_messages) == 3
        listing = tool_messages[0]["content"]
        assert "README.md" in listing
        assert "src" in listing
    finally:
        if chat is not None:
            chat.close()
        brain.stop()


def test_a_resume_from_another_machine_or_directory_is_explained(setup: Setup, tmp_path: Path):
    env, token, port, config_dir, work = setup
    brain = Brain(env, port)
    chat: Terminal | None = None
    try:
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        chat = vance(config_dir, "chat", cwd=work)
        session_id = chat.expect(r"new session (sess_\d+)  chat process (tp_\d+)").group(1)
        chat.send_line("/quit")
        assert chat.wait() == 0
        chat.close()

        # another machine: refused, explained, and (with --yes) a new session instead
        other_env = {**vance_env(config_dir), "VANCE_MACHINE_ID": "someone-elses-laptop"}
        chat = Terminal(
            [sys.executable, "-m", "vance", "chat", "--session", session_id, "--yes"],
            cwd=work,
            env=other_env,
        )
        chat.expect("resume refused")
        chat.expect(f"Session {session_id} belongs to another machine")
        new_id = chat.expect(r"new session (sess_\d+)").group(1)
        assert new_id != session_id
        chat.send_line("/quit")
        assert chat.wait() == 0
        chat.close()

        # same machine, another directory: resumed, and the drifted process is listed
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        chat = vance(config_dir, "chat", "--session", session_id, cwd=elsewhere)
        chat.expect(rf"resumed session {session_id}")
        chat.expect("context drift")
        drifted = chat.expect(r"(tp_\d+) \(arthur: chat\) — /resume tp_\d+ \(at your own risk\)")
        process_id = drifted.group(1)
        chat.expect(rf"/stop {process_id}, or /reset {process_id}")
        chat.send_line(f"/resume {process_id}")
        chat.expect(rf"· {process_id} IDLE")
        chat.send_line("/quit")
        assert chat.wait() == 0
    finally:
        if chat is not None:
            chat.close()
        brain.stop()


INBOX_SCRIPT = """\
- match: "ask me first"
  tool_calls:
    - name: inbox_post
      arguments: {kind: APPROVAL, title: "Deploy now?", body: "All tests pass."}
  times: 1
"""


def test_an_inbox_item_shows_inline_and_is_answered_with_slash_answer(setup: Setup, tmp_path: Path):
    env, token, port, config_dir, work = setup
    script = tmp_path / "script.yaml"
    script.write_text(INBOX_SCRIPT)
    brain = Brain({**env, "VANCETOPE_LLM_SCRIPT": str(script)}, port)
    chat: Terminal | None = None
    try:
        create_recipe(brain, token, "cli-asks", ["inbox_post"])
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        chat = vance(config_dir, "chat", "--recipe", "cli-asks", cwd=work)
        chat_process = chat.expect(r"new session sess_\d+  chat process (tp_\d+)").group(1)
        # when the chat's process posts an approval with inbox_post
        chat.send_line("ask me first")
        # then it shows inline, with how to answer it
        item_id = chat.expect(rf"inbox (inb_\d+) · APPROVAL · from {chat_process}").group(1)
        chat.expect("Deploy now?")
        chat.expect(rf"answer with: /answer {item_id} approve\|reject \[comment\]")
        chat.expect(r"brain › echo: ask me first")
        # when it is answered from the chat
        chat.send_line(f"/answer {item_id} approve ship it")
        # then the reply says it reached the process, the item's change shows (in any order),
        # and the process read it as an inbox answer
        sent = chat.position
        ends = []
        for shown in (
            rf"answered {item_id}; {chat_process} has it",
            rf"inbox {item_id} ANSWERED: Deploy now\?",
            # (Markdown on a terminal: the answer's single line break is a space)
            rf"brain › echo: \[inbox answer {item_id}\] approve: ship it",
        ):
            chat.position = sent
            ends.append(chat.expect(shown).end())
        chat.position = max(ends)
        # and a second answer is refused, saying why
        chat.send_line(f"/answer {item_id} reject")
        chat.expect(
            rf"/answer: cannot answer inbox item {item_id}: it is ANSWERED  \(409 conflict\)"
        )
        chat.send_line("/inbox")
        chat.expect("no OPEN inbox items")
        chat.send_line("/quit")
        assert chat.wait() == 0
    finally:
        if chat is not None:
            chat.close()
        brain.stop()


DEEP_THINK_SCRIPT = """\
- engine: arthur
  match: "^study Saturn$"
  times: 1
  tool_calls:
    - name: process_create
      arguments: {recipe: deep-think, goal: "study Saturn"}
- engine: arthur
  match: "^study Saturn$"
  reply: "I started a deep think."
- engine: arthur
  match: "^\\\\[report from tp_\\\\d+ \\\\(marvin\\\\): DONE\\\\]"
  reply: "Marvin reports 95 moons and 7 rings."
- engine: marvin
  step: plan
  tool_calls:
    - name: plan_tasks
      arguments:
        tasks:
          - {kind: WORKER, title: Moons, goal: "count the moons"}
          - {kind: WORKER, title: Rings, goal: "count the rings"}
          - {kind: AGGREGATE, title: Report}
- engine: frankie
  step: report
  match: "count the moons"
  tool_calls:
    - name: report_result
      arguments: {summary: "95 moons.", findings: [], sources: [], confidence: 0.9}
- engine: frankie
  step: report
  match: "count the rings"
  tool_calls:
    - name: report_result
      arguments: {summary: "7 rings.", findings: [], sources: [], confidence: 0.9}
- engine: frankie
  match: "count the moons"
  reply: "95 moons."
  delay: 0.5
- engine: frankie
  match: "count the rings"
  reply: "7 rings."
  delay: 1.5
- engine: marvin
  step: aggregate
  reply: "Saturn: 95 moons, 7 rings."
"""


def test_chat_follows_a_task_tree_with_one_line_per_change_and_prints_it_on_slash_tree(
    setup: Setup, tmp_path: Path
):
    env, _, port, config_dir, work = setup
    script = tmp_path / "script.yaml"
    script.write_text(DEEP_THINK_SCRIPT)
    brain = Brain({**env, "VANCETOPE_LLM_SCRIPT": str(script)}, port)
    chat: Terminal | None = None
    try:
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        chat = vance(config_dir, "chat", "--recipe", "arthur", cwd=work)
        chat.expect(r"new session sess_\d+")
        # when arthur starts a deep think (marvin) for the person
        chat.send_line("study Saturn")
        # then its tree shows whole once it is planned, with the plan's nodes under it
        # and both workers already running at once, each with its worker process
        marvin = chat.expect(r"(tp_\d+) task tree · 1/4 finished · 2 running at once").group(1)
        moons = chat.expect(r"▶ WORKER Moons \(n2\)  RUNNING  (tp_\d+)").group(1)
        rings = chat.expect(r"▶ WORKER Rings \(n3\)  RUNNING  (tp_\d+)").group(1)
        # and each worker's result is one line, with its result's summary (the rings take
        # longer), and their progress the tree's progress line, drawn again as it changes
        chat.expect(rf"✓ {marvin} n2 Moons — DONE \d+\.\ds  95 moons\.")
        chat.expect(rf"✓ {marvin} n3 Rings — DONE \d+\.\ds")
        # and the finished tree once more, then arthur tells the person
        chat.expect(rf"{marvin} task tree · 4/4 finished")
        chat.expect(r"brain › Marvin reports 95 moons and 7 rings\.")
        # the tree was printed whole only when first seen, when planned and when finished
        assert chat.output.count(f"{marvin} task tree") <= 3
        # the workers' status changes were no lines of their own: the progress line told them
        assert f"{marvin} deep think: 2 of 2 workers done" in chat.output
        for worker in (moons, rings):
            assert not re.search(rf"· {worker} [A-Z]", chat.output)
        # while marvin's own status changes still print
        assert f"· {marvin} RUNNING" in chat.output
        # when /tree asks for it, the Brain's current tree is printed
        chat.send_line("/tree")
        chat.expect(rf"{marvin} task tree · 4/4 finished")
        chat.expect(r"✓ AGGREGATE Report \(n4\)  DONE")
        chat.send_line("/quit")
        assert chat.wait() == 0
    finally:
        if chat is not None:
            chat.close()
        brain.stop()


MARKDOWN_ANSWER = SATURN_REPORT


def test_an_answer_in_markdown_is_drawn_formatted_on_the_terminal(setup: Setup, tmp_path: Path):
    env, token, port, config_dir, work = setup
    script = tmp_path / "script.yaml"
    rule = {"match": "^report please$", "reply": MARKDOWN_ANSWER, "delay_per_delta": 0.05}
    script.write_text(json.dumps([rule]))  # JSON is YAML
    brain = Brain({**env, "VANCETOPE_LLM_SCRIPT": str(script)}, port)
    chat: Terminal | None = None
    try:
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        chat = vance(config_dir, "chat", cwd=work)
        chat.expect(r"new session sess_\d+")
        # when the answer, in Markdown, streams in
        chat.send_line("report please")
        # then once complete its last drawing (from its "brain › " to the prompt after it)
        # shows the heading and the bold words as text and the table with aligned columns
        # and a rule, none of the Markdown's marks
        chat.expect(r"• second\s*\n+you › ")
        drawn = chat.output[chat.output.rindex("brain › ", 0, chat.position) : chat.position]
        assert "Saturn report" in drawn
        assert "It has 95 moons and 7 rings." in drawn
        assert re.search(r"body +count", drawn)
        assert re.search(r"moons +95", drawn)
        assert re.search(r"rings +7", drawn)
        assert "─" in drawn
        for mark in ("**", "|---|", "| moons |", "# Saturn", "- first"):
            assert mark not in drawn
        chat.send_line("/quit")
        assert chat.wait() == 0
    finally:
        if chat is not None:
            chat.close()
        brain.stop()
