"""The one-shot `vance` commands against a real Brain: rich tables, clear messages, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.brain import Brain, free_port, post_inbox_item
from tests.support.rest_commands import FINGERPRINT, run_vance
from tests.support.waiting import wait_until

pytestmark = pytest.mark.embedded_brain


def test_lifecycle_commands_drive_a_process_and_explain_a_409(brain, config_dir: Path):
    running, token, _ = brain
    client = running.socket(token)
    try:
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        process_id = created["data"]["chatProcessId"]
        wait_until(lambda: running.get(f"/api/processes/{process_id}", token)["status"] == "IDLE")

        listed = run_vance(config_dir, "processes", "--status", "idle")
        assert listed.returncode == 0, listed.stderr
        assert process_id in listed.stdout
        assert "IDLE" in listed.stdout

        steered = run_vance(config_dir, "steer", process_id, "focus on 2024")
        assert steered.returncode == 0, steered.stderr
        assert f"Steered {process_id}" in steered.stdout
        reply = client.event("chat-message", role="assistant")
        assert reply["data"]["text"] == "echo: focus on 2024"
        wait_until(lambda: running.get(f"/api/processes/{process_id}", token)["status"] == "IDLE")

        paused = run_vance(config_dir, "pause", process_id)
        assert (paused.returncode, paused.stdout.strip()) == (0, f"{process_id}: PAUSED")
        resumed = run_vance(config_dir, "resume", process_id)
        assert (resumed.returncode, resumed.stdout.strip()) == (0, f"{process_id}: IDLE")
        stopped = run_vance(config_dir, "stop", process_id)
        assert stopped.returncode == 0
        assert stopped.stdout.strip() == f"{process_id}: CLOSED (STOPPED)"

        # when: a command the status forbids
        again = run_vance(config_dir, "pause", process_id)
        # then: exit 1 and a message that says why
        assert again.returncode == 1
        message = " ".join(again.stderr.split())
        assert message.startswith(f"Refused (409 conflict): cannot pause process {process_id}")
        assert "CLOSED" in message
        assert "status does not allow this" in message
    finally:
        client.close()


def test_an_unknown_process_is_a_clear_404(config_dir: Path):
    done = run_vance(config_dir, "steer", "tp_99999", "hello")
    assert done.returncode == 1
    assert "Not found (404): process tp_99999 not found" in done.stderr


def test_engines_and_recipes_are_tables(config_dir: Path):
    engines = run_vance(config_dir, "engines")
    assert engines.returncode == 0, engines.stderr
    assert "Think engines" in engines.stdout
    assert "ford" in engines.stdout
    recipes = run_vance(config_dir, "recipes")
    assert recipes.returncode == 0, recipes.stderr
    assert "ford" in recipes.stdout


def post_json(running: Brain, path: str, token: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{running.url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_runs_lists_the_runs_of_a_process_with_why_they_stopped(brain, config_dir: Path):
    # given a workflow run that blocks on its question
    running, token, _ = brain
    workflow = {
        "name": "asks",
        "goal": "Ask about ${input.topic}",
        "inputs": ["topic"],
        "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which ${input.topic}?"}],
    }
    workflow_id = post_json(running, "/api/workflows", token, workflow)["id"]
    started = post_json(
        running, f"/api/workflows/{workflow_id}/run", token, {"input": {"topic": "moons"}}
    )
    run_id, process_id = started["runId"], started["process"]["id"]
    wait_until(lambda: running.get(f"/api/runs/{run_id}", token)["status"] == "blocked")
    # when vance lists the runs of its process
    runs = run_vance(config_dir, "runs", "--process", process_id)
    # then the table has the run, its trigger, its status and why
    assert runs.returncode == 0, runs.stderr
    assert "Runs (1 of 1)" in runs.stdout
    line = next(line for line in runs.stdout.splitlines() if run_id in line)
    for part in (f"workflow {workflow_id}", process_id, "blocked", "waiting for input: Which"):
        assert part in line
    # and --status filters them
    blocked = run_vance(config_dir, "runs", "--process", process_id, "--status", "blocked")
    assert "Runs (1 of 1)" in blocked.stdout
    assert run_id in blocked.stdout
    done = run_vance(config_dir, "runs", "--process", process_id, "--status", "completed")
    assert "Runs (0 of 0)" in done.stdout
    assert run_id not in done.stdout
    # and a filter the Brain refuses is explained
    refused = run_vance(config_dir, "runs", "--process", "12")
    assert refused.returncode == 1
    assert "process: must be a process id like tp_12" in refused.stderr


def test_inbox_lists_answers_and_dismisses_items(brain, config_dir: Path):
    running, token, _ = brain
    client = running.socket(token)
    try:
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        chat = created["data"]["chatProcessId"]
        approval = post_inbox_item(running.env, chat, "APPROVAL", "Deploy now?")
        question = post_inbox_item(
            running.env, chat, "QUESTION", "Which year?", "", ["2023", "2024"]
        )
        report = post_inbox_item(running.env, chat, "OUTPUT_TEXT", "Report ready")
        # when / then: the OPEN items, as a table
        listed = run_vance(config_dir, "inbox")
        assert listed.returncode == 0, listed.stderr
        for item_id, title in [
            (approval, "Deploy now?"),
            (question, "Which year?"),
            (report, "Report ready"),
        ]:
            assert item_id in listed.stdout
            assert title in listed.stdout
        assert "2023 | 2024" in listed.stdout
        # answers typed as words: a decision with a comment, an option
        approved = run_vance(config_dir, "inbox", "answer", approval, "approve ship it")
        assert approved.returncode == 0, approved.stderr
        assert f"answered {approval}; {chat} has it" in " ".join(approved.stdout.split())
        chose = run_vance(config_dir, "inbox", "answer", question, "2024")
        assert chose.returncode == 0, chose.stderr
        dismissed = run_vance(config_dir, "inbox", "dismiss", report)
        assert dismissed.stdout.strip() == f"Dismissed {report}."
        reply = client.event("chat-message", role="assistant")
        assert reply["data"]["text"] == f"echo: [inbox answer {approval}]\napprove: ship it"
        answered = run_vance(config_dir, "inbox", "--status", "answered")
        assert "decision: approve, comment: ship it" in answered.stdout
        assert "choice: 2024" in answered.stdout
        assert report not in answered.stdout
        # a second answer: exit 1 and why
        again = run_vance(config_dir, "inbox", "answer", approval, "reject")
        assert again.returncode == 1
        message = " ".join(again.stderr.split())
        assert (
            f"Refused (409 conflict): cannot answer inbox item {approval}: it is ANSWERED"
            in message
        )
        assert "vance inbox --status all" in message
        # a wrong answer: the Brain names the field
        wrong = run_vance(config_dir, "inbox", "answer", question, "")
        assert wrong.returncode == 1
    finally:
        client.close()


def test_an_unknown_inbox_item_is_a_clear_404(config_dir: Path):
    done = run_vance(config_dir, "inbox", "answer", "inb_99999", "approve")
    assert done.returncode == 1
    assert "Not found (404): inbox item inb_99999 not found" in done.stderr


def test_a_refused_token_is_not_stored_and_says_to_log_in_again(brain, tmp_path: Path):
    running, _, _ = brain
    config = tmp_path / "bad"
    done = run_vance(config, "login", "--server", running.url, "--token", "not-a-token")
    assert done.returncode == 3
    assert "refused the token (401" in done.stderr
    assert not (config / "config.json").exists()


def test_commands_before_login_say_how_to_log_in(tmp_path: Path):
    done = run_vance(tmp_path / "empty", "processes")
    assert done.returncode == 3
    assert "vance login" in done.stderr


def test_an_unreachable_brain_exits_4(tmp_path: Path):
    config = tmp_path / "offline"
    port = free_port()
    login = run_vance(config, "login", "--server", f"127.0.0.1:{port}", "--token", "t")
    assert login.returncode == 0
    assert "not verified" in login.stderr
    done = run_vance(config, "engines")
    assert done.returncode == 4
    assert "Is the Brain running?" in done.stderr


def chat_exit(config_dir: Path) -> tuple[int, str]:
    """`vance chat` with its input held open, so only the connection decides how it ends."""
    env = {**os.environ, "VANCE_CONFIG_DIR": str(config_dir), "COLUMNS": "200"}
    process = subprocess.Popen(
        [sys.executable, "-m", "vance", "chat"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        code = process.wait(timeout=60)
        assert process.stdout is not None
        return code, " ".join(process.stdout.read().split())
    finally:
        if process.poll() is None:
            process.kill()
        assert process.stdin is not None
        process.stdin.close()


def test_chat_with_a_refused_token_exits_3(brain, tmp_path: Path):
    running, _, _ = brain
    config = tmp_path / "stale"
    config.mkdir()
    (config / "config.json").write_text(json.dumps({"server": running.url, "token": "stale"}))
    code, output = chat_exit(config)
    assert code == 3
    assert "The Brain refused the token (401)" in output


def test_chat_without_a_brain_exits_4(tmp_path: Path):
    config = tmp_path / "offline"
    config.mkdir()
    server = f"http://127.0.0.1:{free_port()}"
    (config / "config.json").write_text(json.dumps({"server": server, "token": "t"}))
    code, output = chat_exit(config)
    assert code == 4
    assert f"Cannot reach the Brain at {server}" in output


def test_notifications_lists_the_unread_ones_and_marks_one_or_all_read(brain, config_dir: Path):
    # given two workflow runs that block on their questions, each notifying the user
    running, token, _ = brain
    workflow = {
        "name": "asks-twice",
        "goal": "Ask about ${input.topic}",
        "inputs": ["topic"],
        "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which ${input.topic}?"}],
    }
    workflow_id = post_json(running, "/api/workflows", token, workflow)["id"]
    run_ids = [
        post_json(running, f"/api/workflows/{workflow_id}/run", token, {"input": {"topic": t}})[
            "runId"
        ]
        for t in ("moons", "rings")
    ]

    def all_blocked() -> bool:
        return all(running.get(f"/api/runs/{r}", token)["status"] == "blocked" for r in run_ids)

    assert wait_until(all_blocked)
    unread = running.get("/api/notifications?unread=true", token)["results"]
    mine = [row for row in unread if row["runId"] in run_ids]
    assert len(mine) == 2
    # when vance lists the unread notifications
    listed = run_vance(config_dir, "notifications", "--unread")
    # then both are there, with their runs
    assert listed.returncode == 0, listed.stderr
    assert "Notifications: unread" in listed.stdout
    for row in mine:
        line = next(line for line in listed.stdout.splitlines() if row["id"] in line)
        assert row["runId"] in line
        assert "warning" in line
    # when one is marked read, it leaves the unread list
    first = mine[0]["id"]
    read = run_vance(config_dir, "notifications", "read", first)
    assert (read.returncode, read.stdout.strip()) == (0, f"Read {first}.")
    assert first not in run_vance(config_dir, "notifications", "--unread").stdout
    # and read-all marks the rest
    done = run_vance(config_dir, "notifications", "read-all")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Marked ")
    assert running.get("/api/notifications?unread=true", token)["count"] == 0
    # an unknown one is a clear 404
    missing = run_vance(config_dir, "notifications", "read", "ntf_999999")
    assert missing.returncode == 1
    assert "not found" in missing.stderr


def test_vance_processes_shows_each_processs_last_task(brain, config_dir: Path):
    # given a session whose chat process answered one message
    running, token, _ = brain
    client = running.socket(token)
    try:
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        process_id = created["data"]["chatProcessId"]
        client.request("chat", {"text": "what did I ask last"})
        client.event("chat-message", role="assistant")
        wait_until(lambda: running.get(f"/api/processes/{process_id}", token)["status"] == "IDLE")
        # when the person lists their processes with the CLI
        listed = run_vance(config_dir, "processes", "--session", created["data"]["session"]["id"])
        # then the process's row says, under its goal, that turn and its status
        assert listed.returncode == 0, listed.stderr
        assert process_id in listed.stdout
        assert "last: what did I ask last (DONE)" in " ".join(listed.stdout.split())
    finally:
        client.close()


def test_vance_processes_leaves_service_processes_out_unless_asked(brain, config_dir: Path):
    # given a session with a process of the service recipe agrajag and an ordinary one
    running, token, _ = brain
    client = running.socket(token)
    try:
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        session = created["data"]["session"]["id"]
        ids = []
        for recipe in ("agrajag", "ford"):
            body = {"session": session, "recipe": recipe, "goal": "x", "start": False}
            status, process = running.post("/api/processes", token, body)
            assert status == 201, process
            ids.append(process["id"])
        service, ordinary = ids
        # when the person lists their processes
        plain = run_vance(config_dir, "processes", "--session", session)
        # then the service process is not among them
        assert plain.returncode == 0, plain.stderr
        assert ordinary in plain.stdout
        assert service not in plain.stdout
        # and --service lists it, alone
        services = run_vance(config_dir, "processes", "--session", session, "--service")
        assert services.returncode == 0, services.stderr
        assert service in services.stdout
        assert ordinary not in services.stdout
        assert "Service processes (1 of 1)" in services.stdout
    finally:
        client.close()
