"""The run pages in a real browser (Debian's Chromium, driven by Playwright) against a real
Brain OS process: a chat turn is a `user` run whose page draws its timeline; notifications
show their unread count and are marked all read. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.brain import ROOT, Brain, bootstrap, brain_env, free_port
from tests.support.browser import ARTIFACTS, CHROMIUM, open_tab
from tests.support.waiting import wait_until

PASSWORD = "pw-run-timeline"
FINGERPRINT = {"machineId": "timeline-machine", "workingDir": "/srv/timeline"}
ASKS = {
    "name": "asks",
    "goal": "Ask about ${input.topic}",
    "inputs": ["topic"],
    "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which ${input.topic}?"}],
}

ASKING_PLAN = [
    {
        "name": "plan_tasks",
        "arguments": {
            "tasks": [
                {"kind": "USER_INPUT", "title": "Colour", "goal": "Which colour?"},
                {"kind": "AGGREGATE", "title": "Report"},
            ]
        },
    }
]

if not CHROMIUM.exists():
    pytest.skip(
        "browser tests need Debian's Chromium at /usr/bin/chromium", allow_module_level=True
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect
pytestmark = pytest.mark.embedded_brain


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Brain, str]]:
    var_dir = tmp_path_factory.mktemp("timeline-brain")
    # The echo, but a deep think's plan asks the person first (a USER_INPUT node), in a turn
    # of the lane's: its run ends blocked.
    script = var_dir / "script.yaml"
    script.write_text(json.dumps([{"engine": "marvin", "step": "plan", "tool_calls": ASKING_PLAN}]))
    env = brain_env(var_dir, VANCETOPE_LLM="scripted", VANCETOPE_LLM_SCRIPT=str(script))
    token = bootstrap(env)
    subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; "
            "user = get_user_model().objects.get(username='local'); "
            f"user.set_password({PASSWORD!r}); user.save()",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    running = Brain(env, free_port())
    yield running, token
    running.stop()


@pytest.fixture
def page(brain: tuple[Brain, str], browser: Any) -> Iterator[Any]:
    """A tab of a browser context of its own, logged in."""
    running, _ = brain
    tab = open_tab(browser, running.url, PASSWORD)
    expect(tab.locator("h1")).to_have_text("Think processes")
    yield tab
    tab.context.close()


def post_json(running: Brain, path: str, token: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{running.url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_a_chat_turn_is_a_user_run_whose_page_draws_its_timeline(page, brain):
    # given a chat turn over a real socket
    running, token = brain
    client = running.socket(token)
    try:
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        chat_id = created["data"]["chatProcessId"]
        client.request("chat", {"text": "hello timeline"})
        client.event("chat-message", role="assistant")
    finally:
        client.close()

    def stored_run() -> dict[str, Any] | None:
        found = running.get(f"/api/runs?process={chat_id}", token)["results"]
        return found[0] if found and found[0]["status"] == "completed" else None

    run = wait_until(stored_run)
    assert run is not None
    # when the runs page is opened, the run is listed as a user run, among the chat turns
    # folded; its link opens its page
    page.goto("/runs/")
    card = page.locator(f".run-row[data-run={run['id']}]")
    page.locator(".run-fold", has=card).locator("summary", has_text="chat turn").click()
    expect(card.locator(".run-trigger")).to_have_text("user")
    expect(card.locator(".run-client")).to_have_text("cli")
    card.locator(f"a[href='/runs/{run['id']}']").click()
    # then the page draws the run's lane and its process's lane, with a RUNNING bar
    expect(page.locator("h1")).to_contain_text(run["id"])
    expect(page.locator("#run")).to_have_attribute("data-status", "completed")
    expect(page.locator(f".lane[data-lane={run['id']}] .bar")).to_have_count(1)
    running_bar = page.locator(f".lane[data-lane={chat_id}] .bar[data-status=RUNNING]")
    expect(running_bar).to_have_count(1)
    box = running_bar.bounding_box()
    assert box is not None
    assert box["width"] > 0
    assert box["height"] > 0
    # and its moments: the turn's move to RUNNING and back, and what was said
    moments = page.locator("#moments")
    expect(moments).to_contain_text("IDLE → RUNNING")
    expect(moments).to_contain_text("RUNNING → IDLE")
    expect(moments).to_contain_text("user: hello timeline")
    expect(moments).to_contain_text("assistant: echo: hello timeline")
    expect(page.locator("#run-counts")).to_contain_text("1 tasks done")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "webui-run-timeline.png"), full_page=True)


def test_a_blocked_runs_notification_is_counted_unread_and_marked_all_read(page, brain):
    # given a workflow run that blocks on its question, which notifies the user
    running, token = brain
    workflow_id = post_json(running, "/api/workflows", token, ASKS)["id"]
    started = post_json(
        running, f"/api/workflows/{workflow_id}/run", token, {"input": {"topic": "moons"}}
    )
    run_id = started["runId"]
    wait_until(lambda: running.get(f"/api/runs/{run_id}", token)["status"] == "blocked")
    unread = running.get("/api/notifications?unread=true", token)["count"]
    assert unread >= 1
    # when the runs page is opened
    page.goto("/runs/")
    # then it counts the unread notifications, and the run's page shows its blocked lane
    expect(page.locator("#unread-count")).to_have_text(f"{unread} unread")
    expect(page.locator("#notifications")).to_contain_text(f"({run_id}) is blocked")
    page.goto(f"/runs/{run_id}")
    expect(page.locator(f".lane[data-lane={run_id}] .bar[data-status=running]")).to_have_count(1)
    expect(page.locator("#moments")).to_contain_text("running → blocked")
    # when all are marked read
    page.goto("/runs/")
    page.click("#read-all")
    # then none is unread, here and over REST
    expect(page.locator("#unread-count")).to_have_text("0 unread")
    expect(page.locator("#read-all")).to_have_count(0)
    assert running.get("/api/notifications?unread=true", token)["count"] == 0
    assert re.search(r"Marked \d+ read\.", page.locator("main").inner_text())


def test_the_run_of_a_process_that_asked_and_then_finished_reads_completed(page, brain):
    # given a person's deep think (over REST, a root process) that asks a question first
    running, token = brain
    client = running.socket(token)
    created = client.request(
        "session-create",
        {"clientType": "web", "projectId": "proj_default", "fingerprint": FINGERPRINT},
    )
    session_id = created["data"]["session"]["id"]
    body = {"session": session_id, "recipe": "deep-think", "goal": "chart"}
    process_id = post_json(running, "/api/processes", token, body)["id"]

    def runs() -> list[dict[str, Any]]:
        return running.get(f"/api/runs?process={process_id}", token)["results"]

    wait_until(lambda: runs() and runs()[0]["status"] == "blocked")
    # when the person answers its question in the inbox, and it goes on to the end
    items = running.get(f"/api/inbox?process={process_id}", token)["results"]
    assert [item["kind"] for item in items] == ["QUESTION"]
    post_json(running, f"/api/inbox/{items[0]['id']}/answer", token, {"answer": {"text": "blue"}})
    wait_until(lambda: running.get(f"/api/processes/{process_id}", token)["status"] == "CLOSED")
    # then its run went on and reads completed (before: "blocked · waiting for a person" for
    # ever, beside a second run), with the question and its answer on its timeline
    wait_until(lambda: runs()[0]["status"] == "completed")
    [run] = runs()
    page.goto(f"/runs/{run['id']}")
    expect(page.locator("#run")).to_have_attribute("data-status", "completed")
    expect(page.locator("main")).not_to_contain_text("waiting for a person")
    expect(page.locator("#moments")).to_contain_text("BLOCKED → RUNNING")
    client.close()
