"""The web UI in a real browser: Debian's Chromium, driven by Playwright, against a real Brain
started as an OS process (tests/webui/conftest.py: `brain` and `browser` shared by the module,
a logged-in `page` of each test's own). Every test sets up what it needs itself, on a Brain
that the other tests of the module use too: it finds its rows by the ids it made, not by
position or count. Screenshots of the dashboard and the chat go to test-artifacts/.

Needs /usr/bin/chromium (`apt-get install chromium`); Playwright never downloads a browser here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.brain import Brain, last_line, manage_shell, post_inbox_item
from tests.support.browser import CHAT_PASSWORD as PASSWORD
from tests.support.browser import CHROMIUM, DESKTOP, MISSING, PHONE, screenshot

FINGERPRINT = {"machineId": "browser-test-machine", "workingDir": "/srv/browser"}

if not CHROMIUM.exists():
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="browser tests need Playwright: pip install -e '.[dev]'"
)
expect = sync_api.expect
pytestmark = pytest.mark.embedded_brain


def at_width(page: Any, size: dict[str, int], name: str) -> None:
    page.set_viewport_size(size)
    screenshot(page, name)
    page.set_viewport_size(DESKTOP)


def open_chat(page: Any) -> str:
    """The interactive page opened in `page` in a new chat of its own (a plain visit would go
    back into the person's latest chat, another test's); the id of its chat process."""
    page.goto("/interactive/?new=1")
    root = page.locator("#interactive")
    expect(root).to_have_attribute("data-connection", "open")
    return str(root.get_attribute("data-chat-process"))


def say(page: Any, text: str) -> None:
    """`text` sent to the chat, and its echo waited for, the chat process IDLE again."""
    page.fill("#chat-input", text)
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-log .message.role-assistant[data-final=true]").last).to_contain_text(
        f"echo: {text}"
    )
    expect(page.locator("#process-status")).to_have_text("IDLE")


def test_login_leads_to_the_dashboard_kept_fresh(browser, brain):
    visitor = browser.new_context(viewport=DESKTOP, base_url=brain.url)
    visitor.set_default_timeout(20_000)
    page = visitor.new_page()
    try:
        # when: a visitor opens the dashboard
        page.goto("/")
        # then: the login page comes first
        expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
        page.fill("#id_username", "local")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Think processes")
        expect(page.locator("#process-table")).to_have_attribute("data-loaded", "live")
        expect(page.locator("#refresh-note")).to_contain_text("Refreshed at")
    finally:
        visitor.close()


def test_chat_shows_the_reply_while_it_streams_and_then_the_final_message(page):
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    expect(page.locator("#process-status")).to_have_text("IDLE")
    # when
    page.fill("#chat-input", "slowly please")
    page.press("#chat-input", "Enter")
    # then: the reply grows in a streaming bubble before the final chat-message replaces it
    streaming = page.locator("#chat-log .message.role-assistant.streaming")
    expect(streaming).to_contain_text("echo: slowly")
    partial = streaming.inner_text()
    final = page.locator("#chat-log .message.role-assistant[data-final=true]")
    expect(final).to_have_text(
        re.compile("echo: slowly, one word after another, until the reply is complete")
    )
    assert "complete" not in partial
    assert int(final.get_attribute("data-deltas")) > 3
    expect(page.locator("#chat-log .message.role-user")).to_have_text(re.compile("slowly please"))
    # and a quick echo for the record
    page.fill("#chat-input", "hello browser")
    page.click("#chat-send")
    expect(page.locator("#chat-log .message.role-assistant[data-final=true]").last).to_contain_text(
        "echo: hello browser"
    )
    expect(page.locator("#process-status")).to_have_text("IDLE")
    screenshot(page, "chat-desktop")
    at_width(page, PHONE, "chat-phone")


def test_pause_steer_and_resume_the_chat_process(page):
    # given: the chat open, its process IDLE
    open_chat(page)
    status = page.locator("#process-status")
    expect(status).to_have_text("IDLE")
    # when: paused
    page.click("button[data-command=process-pause]")
    # then
    expect(status).to_have_text("PAUSED")
    expect(page.locator("button[data-command=process-pause]")).to_be_disabled()
    expect(page.locator("#events")).to_contain_text("→ PAUSED")
    # when: steered while paused, the message waits
    page.fill("#steer-input", "focus on 2024")
    page.click("#steer-send")
    expect(page.locator("#notice")).to_contain_text("(1 pending)")
    page.wait_for_timeout(500)
    assert "echo: focus on 2024" not in page.locator("#chat-log").inner_text()
    # when: resumed, the waiting steer is taken up
    page.click("button[data-command=process-resume]")
    expect(page.locator("#events")).to_contain_text("→ RUNNING")
    expect(page.locator("#chat-log")).to_contain_text("echo: focus on 2024")
    expect(status).to_have_text("IDLE")
    screenshot(page, "chat-steered-desktop")


def test_a_409_is_shown_as_a_notice_and_the_socket_stays_usable(page):
    # given: the chat open, its process IDLE
    chat = open_chat(page)
    expect(page.locator("#process-status")).to_have_text("IDLE")
    # when: the resume button, off for an IDLE process, asks the Brain anyway (as the console
    # could); enabled and clicked in one task, so a status event in between cannot turn it off
    page.evaluate(
        "(() => { const b = document.querySelector('[data-command=process-resume]');"
        " b.disabled = false; b.click(); })()"
    )
    # then: the Brain's 409 is the notice, and the chat still answers over the same socket
    expect(page.locator("#notice")).to_have_text(
        f"409 conflict: cannot resume process {chat}: it is IDLE"
    )
    page.fill("#chat-input", "still here")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-log")).to_contain_text("echo: still here")


def test_a_reload_resumes_the_session_with_its_transcript(page):
    # given: a new chat open, with a transcript of its own
    page.goto("/interactive/?new=1")
    root = page.locator("#interactive")
    expect(root).to_have_attribute("data-connection", "open")
    page.fill("#chat-input", "before the reload")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-log")).to_contain_text("echo: before the reload")
    expect(page.locator("#process-status")).to_have_text("IDLE")
    first_line = page.locator("#chat-log .message.role-user").first.inner_text()
    session = root.get_attribute("data-session")
    chat = root.get_attribute("data-chat-process")
    # when: the page is reloaded
    page.reload()
    # then: the same session is resumed (not a new one), the transcript is back, user lines too
    expect(root).to_have_attribute("data-connection", "open")
    expect(root).to_have_attribute("data-session-how", "resumed")
    assert (root.get_attribute("data-session"), root.get_attribute("data-chat-process")) == (
        session,
        chat,
    )
    expect(page.locator("#connection")).to_have_text(f"resumed · {session}")
    expect(page.locator("#chat-log")).to_contain_text("echo: before the reload")
    assert page.locator("#chat-log .message.role-user").first.inner_text() == first_line
    expect(page.locator("#process-status")).to_have_text("IDLE")
    page.fill("#chat-input", "after the reload")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-log .message.role-assistant[data-final=true]").last).to_contain_text(
        "echo: after the reload"
    )


def test_dashboard_filters_by_status_and_opens_the_suspended_chat(page):
    # given: a chat with one exchange in it
    chat = open_chat(page)
    say(page, "focus on 2024")
    # when: the interactive page is left, its web session is suspended (not closed)
    page.goto("/")
    expect(page.locator("#process-table")).to_have_attribute("data-loaded", "live")
    expect(page.locator("#new-chat")).to_have_attribute("href", "/interactive/?new=1")
    expect(page.locator("#new-process-link")).to_have_attribute("href", "/interactive/#new-process")
    screenshot(page, "dashboard-desktop")
    at_width(page, PHONE, "dashboard-phone")
    page.select_option("#status", "SUSPENDED")
    # then
    expect(page).to_have_url(re.compile(r"/\?status=SUSPENDED(&category=)?$"))
    row = page.locator(f"#process-table tr[data-process='{chat}']")
    expect(row).to_contain_text("SUSPENDED")
    expect(page.locator("#process-table")).to_have_attribute("data-loaded", "live")
    # every row shown as a match is SUSPENDED (a tree's top that is not is only its context)
    expect(page.locator("#process-table tr.match:not(:has(.status-SUSPENDED))")).to_have_count(0)
    # when
    row.get_by_role("link", name=chat).click()
    # then
    expect(page.locator("#conversation")).to_contain_text("echo: focus on 2024")
    expect(page.locator("#task-tree")).to_contain_text("no task tree")
    expect(page.locator("#process-calls button")).to_have_text(["Resume", "Reset", "Stop"])
    expect(page.locator("#runs .run-row").first.locator(".run-trigger")).to_have_text("user")
    expect(page.locator("#inbox")).to_contain_text("This process posted or asked no inbox items.")
    screenshot(page, "process-desktop")
    at_width(page, PHONE, "process-phone")


def test_stopping_a_process_closes_it_and_turns_the_controls_off(page):
    # given: the chat open, left for the dashboard and come back to, its session resumed
    open_chat(page)
    page.goto("/")
    expect(page.locator("#process-table")).to_have_attribute("data-loaded", "live")
    page.goto("/interactive/")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "resumed")
    status = page.locator("#process-status")
    expect(status).to_have_text("IDLE")
    old_session = page.locator("#interactive").get_attribute("data-session")
    # when
    page.click("button[data-command=process-stop]")
    # then: closed, with its reason, and the chat says how to go on
    expect(status).to_have_text("CLOSED")
    expect(page.locator("#process-close-reason")).to_have_text("STOPPED")
    expect(page.locator("#notice")).to_contain_text("start a New session to chat again")
    for command in ("process-pause", "process-resume", "process-stop"):
        expect(page.locator(f"button[data-command={command}]")).to_be_disabled()
    expect(page.locator("#steer-send")).to_be_disabled()
    expect(page.locator("#chat-send")).to_be_disabled()
    # when: a new session is asked for
    page.click("#project-form button[type=submit]")
    # then
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    assert page.locator("#interactive").get_attribute("data-session") != old_session
    expect(status).to_have_text("IDLE")


def test_new_chat_on_the_dashboard_opens_a_new_session(page):
    page.goto("/interactive/")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    before = page.locator("#interactive").get_attribute("data-session")
    page.goto("/")
    # when
    page.click("#new-chat")
    # then
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    assert page.locator("#interactive").get_attribute("data-session") != before
    expect(page.locator("#chat-log .message")).to_have_count(0)


def test_new_process_on_the_dashboard_creates_one_in_the_session(page):
    page.goto("/")
    # when
    page.click("#new-process-link")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    expect(page.locator("#create-recipe option[value=ford]")).to_have_count(1)
    page.select_option("#create-recipe", "ford")
    page.fill("#create-goal", "a goal from the form")
    page.click("#create-send")
    # then: the new process is selected
    expect(page.locator("#notice")).to_contain_text("(ford)")
    created = page.locator("#process-select").input_value()
    assert created != page.locator("#interactive").get_attribute("data-chat-process")
    expect(page.locator("#process-select option:checked")).to_contain_text("a goal from the form")


def test_a_process_page_hands_its_process_to_a_second_interactive_tab_for_steering(page):
    # given: the first tab chats in its own session
    chat = open_chat(page)
    second = page.context.new_page()
    try:
        # when: the dashboard's process page sends a second tab to interactive mode for it
        second.goto(f"/processes/{chat}")
        second.get_by_role("link", name=re.compile("interactive mode")).click()
        expect(second.locator("#interactive")).to_have_attribute("data-connection", "open")
        expect(second.locator("#process-select")).to_have_value(chat)
        expect(second.locator("#process-status")).to_have_text("IDLE")
        second.fill("#steer-input", "from the other tab")
        second.click("#steer-send")
        # then: the steer is answered in the first tab's chat, whose session owns the process
        expect(second.locator("#notice")).to_contain_text(f"Steered {chat}")
        expect(page.locator("#chat-log")).to_contain_text("echo: from the other tab")
    finally:
        second.close()


def test_the_admin_process_page_shows_the_inspector_fields(page):
    chat = open_chat(page)
    # when: the operator (user `local` is staff) opens the process in the admin
    page.goto(f"/admin/processes/thinkprocess/{chat.removeprefix('tp_')}/change/")
    # then
    expect(page.locator("body")).to_contain_text("Task tree")
    expect(page.locator("body")).to_contain_text("Recent session events (newest 20)")
    expect(page.locator("table.session-events")).to_contain_text("process-status")
    screenshot(page, "admin-process-desktop")


def test_an_approval_is_answered_on_the_inbox_page_and_reaches_the_chat(page, brain):
    # given: a chat open in interactive mode, whose process asks for an approval
    chat = open_chat(page)
    item_id = post_inbox_item(brain.env, chat, "APPROVAL", "Deploy?", "All **tests** pass.")
    inbox = page.context.new_page()
    try:
        # when: the inbox page (a second tab, so the chat's session stays open) approves it
        inbox.goto("/inbox/")
        card = inbox.locator(f"li[data-item='{item_id}']")
        expect(card).to_contain_text("Deploy?")
        expect(card.get_by_role("link", name=chat)).to_be_visible()
        screenshot(inbox, "inbox-desktop")
        at_width(inbox, PHONE, "inbox-phone")
        card.get_by_label("Comment (optional)").fill("ship it")
        card.get_by_role("button", name="Approve").click()
        # then: the answer is stored and delivered, the item leaves the OPEN list
        expect(inbox.locator("ul.flash")).to_contain_text(f"{item_id} answered.")
        expect(inbox.locator(f"li[data-item='{item_id}']")).to_have_count(0)
        # and the chat's process read it as an inbox answer and replied to it
        expect(page.locator("#chat-log")).to_contain_text("approve: ship it")
        expect(page.locator("#events")).to_contain_text(f"inbox {item_id} ANSWERED")
    finally:
        inbox.close()


def token_of(brain: Brain) -> str:
    return (Path(brain.env["VANCETOPE_VAR_DIR"]) / "token").read_text().strip()


def emit_task_tree(env: dict[str, str], process_id: str, tree: dict[str, Any]) -> None:
    """A task-tree event of the process, stored from a separate OS process on the Brain's
    database as an engine's ctx.events would; sockets get it with the session's next event."""
    code = (
        "from sessions_app.events import emit_event; from processes.models import ThinkProcess; "
        f"p = ThinkProcess.objects.get(pk={process_id[3:]}); "
        f"emit_event(p.session_id, 'task-tree', {{'processId': {process_id!r}, 'tree': {tree!r}}})"
    )
    manage_shell(env, code)


def test_the_process_page_draws_a_running_marvin_tree_live_until_it_closes(page, brain):
    # given: a deep-think process started over another client's socket
    client = brain.socket(token_of(brain))
    try:
        client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        created = client.request("process-create", {"recipe": "deep-think", "goal": "Saturn"})
        marvin_id = created["data"]["process"]["id"]
        # when: its page is opened while it runs
        page.goto(f"/processes/{marvin_id}")
        section = page.locator("#task-tree")
        view = page.locator("#task-tree-view")
        # then: the plan's nodes are drawn, both workers seen running side by side, each
        # linked to its process
        expect(section).to_have_attribute("data-live", "polling")
        expect(view.locator("li.tree-node")).to_have_count(4)
        running = view.locator("li.tree-node[data-status=RUNNING][data-kind=WORKER]")
        expect(running).to_have_count(2)
        expect(view.locator(".tree-summary")).to_contain_text("2 running at once")
        expect(running.first.locator("a.worker-link")).to_have_attribute(
            "href", re.compile(r"/tp_\d+$")
        )
        expect(page.locator(".tree-legend li")).to_have_count(6)
        screenshot(page, "process-tree-running")
        # the plan (the root) holds the three other nodes
        plan = view.locator("li.tree-node[data-kind=PLAN]")
        expect(plan.locator("li.tree-node")).to_have_count(3)
        # a node's result opens on click, and stays open while the tree is redrawn
        plan.locator("summary").first.click()
        expect(plan.locator("dl.facts").first).to_contain_text("Saturn")
        rendered = int(view.get_attribute("data-rendered"))
        # when the tree finishes and the process closes, without reloading the page
        expect(page.locator("#process-status")).to_have_text("CLOSED", timeout=40_000)
        # then: every node DONE in its colour, each worker's result shown, the polling stopped
        expect(view.locator("li.tree-node[data-status=DONE]")).to_have_count(4)
        assert int(view.get_attribute("data-rendered")) > rendered
        expect(section).to_have_attribute("data-live", "stopped")
        expect(page.locator("#task-tree-note")).to_contain_text("final tree")
        done_colour = view.locator("li.node-DONE > details.tree-box").first.evaluate(
            "box => getComputedStyle(box).borderLeftColor"
        )
        assert done_colour == "rgb(31, 122, 61)"
        expect(plan.locator("details.tree-box").first).to_have_attribute("open", "")
        moons = view.locator("li.tree-node[data-kind=WORKER]").first
        expect(moons.locator(".node-title")).to_have_text("Count the <moons>")
        moons.locator("summary").click()
        # its structured result: the summary, and the whole result below it
        expect(moons.locator("dl.facts .result-summary")).to_have_text("95 moons.")
        expect(moons.locator("dl.facts pre.json")).to_contain_text('"confidence": 0.9')
        expect(moons.locator(".duration")).to_have_text(re.compile(r"^\d+\.\d s$"))
        # and the sub-processes are listed, closed, each worker link leads to its own page
        expect(page.locator("#children-table tbody tr")).to_have_count(2)
        expect(page.locator("#children-table .status-CLOSED")).to_have_count(2)
        screenshot(page, "process-tree-done")
        worker_id = moons.locator("a.worker-link").inner_text()
        moons.locator("a.worker-link").click()
        expect(page).to_have_url(re.compile(f"/processes/{worker_id}$"))
        parent = page.locator("#process").get_by_role("link", name=marvin_id)
        expect(parent).to_have_attribute("href", f"/processes/{marvin_id}")
    finally:
        client.close()


def test_a_pending_node_cancelled_on_the_process_page_is_skipped_and_the_tree_finishes(page, brain):
    # given: a deep-think running one worker at a time, whose first worker is running
    client = brain.socket(token_of(brain))
    try:
        client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT},
        )
        created = client.request(
            "process-create",
            {"recipe": "deep-think", "goal": "Saturn", "params": {"maxParallel": 1}},
        )
        marvin_id = created["data"]["process"]["id"]
        page.goto(f"/processes/{marvin_id}")
        view = page.locator("#task-tree-view")
        expect(view.locator("li.tree-node[data-status=RUNNING][data-kind=WORKER]")).to_have_count(1)
        rings = view.locator("li.tree-node[data-kind=WORKER]").nth(1)
        expect(rings).to_have_attribute("data-status", "PENDING")
        # when the person opens the second worker's node and cancels it
        rings.locator("summary").click()
        rings.get_by_role("button", name="Cancel this node").click()
        # then the order is taken, the node is skipped, and the rest of the tree finishes
        expect(page.locator("#task-tree-order")).to_contain_text("Cancel of n3 sent")
        expect(rings).to_have_attribute("data-status", "SKIPPED", timeout=30_000)
        expect(page.locator("#process-status")).to_have_text("CLOSED", timeout=40_000)
        expect(view.locator("li.tree-node[data-status=DONE]")).to_have_count(3)
        expect(rings.locator("dl.facts")).to_contain_text("cancelled by the person")
        # a finished tree offers no cancel buttons
        expect(view.get_by_role("button", name="Cancel this node")).to_have_count(0)
        screenshot(page, "process-tree-cancelled")
    finally:
        client.close()


def test_the_interactive_page_draws_a_task_tree_event_of_its_session(page, brain):
    chat = open_chat(page)
    tree = {
        "rootId": "n1",
        "nodes": [
            {"id": "n1", "parentId": None, "kind": "PLAN", "title": "Plan", "status": "DONE"},
            {"id": "n2", "parentId": "n1", "kind": "WORKER", "title": "Look <up>",
             "status": "FAILED", "error": "budget maxTokens exceeded", "processId": "tp_999"},
        ],
    }  # fmt: skip
    # when: a task-tree event of the session's process arrives (with the next chat's events)
    emit_task_tree(brain.env, chat, tree)
    page.fill("#chat-input", "after the tree")
    page.press("#chat-input", "Enter")
    # then: the same component draws it, under its process
    drawn = page.locator("#interactive-tree")
    expect(drawn.locator("li.tree-node")).to_have_count(2)
    expect(drawn).to_have_attribute("data-process", chat)
    failed = drawn.locator("li.tree-node[data-status=FAILED]")
    expect(failed.locator(".node-title")).to_have_text("Look <up>")
    expect(failed.locator("a.worker-link")).to_have_attribute("href", "/processes/tp_999")
    failed.locator("summary").click()
    expect(failed.locator("dd.error")).to_have_text("budget maxTokens exceeded")
    expect(page.locator("#events")).to_contain_text(f"{chat} task tree updated")
    screenshot(page, "interactive-tree")


def test_the_interactive_inbox_button_counts_open_items_and_answers_them_in_place(page, brain):
    # given: an interactive session whose chat process asks for an approval
    chat = open_chat(page)
    toggle = page.locator("#inbox-toggle")
    expect(toggle).to_be_enabled()
    before = int(toggle.get_attribute("data-count"))
    item_id = post_inbox_item(brain.env, chat, "APPROVAL", "Deploy?", "All tests pass.")
    # when: the inbox button is pressed, the panel opens with the item and the count
    toggle.click()
    card = page.locator(f"#inbox-panel li[data-item='{item_id}']")
    expect(card).to_contain_text("Deploy?")
    expect(page.locator("#inbox-count")).to_have_text(str(before + 1))
    expect(card.get_by_role("link", name=chat)).to_have_attribute("href", f"/processes/{chat}")
    screenshot(page, "interactive-inbox")
    # when: it is approved with a comment from the panel
    card.get_by_label("Comment (optional)").fill("go ahead")
    card.get_by_role("button", name="Approve").click()
    # then: answered and delivered, gone from the panel, and the chat's process read it
    expect(page.locator("#notice")).to_have_text(f"{item_id} answered.")
    expect(card).to_have_count(0)
    expect(page.locator("#inbox-count")).to_have_text(str(before))
    expect(page.locator("#chat-log")).to_contain_text("approve: go ahead")


def create_workflow_row(env: dict[str, str], body: dict[str, Any]) -> str:
    """A workflow of the default project, written by its admin (bootstrap's `local`) from a
    separate OS process on the Brain's database; its id."""
    code = (
        "import json; from triggers.workflows.services import create_workflow; "
        "from django.contrib.auth import get_user_model; "
        "from vancetope.tenancy.models import Project; "
        "project = Project.objects.get(slug='default'); "
        "admin = get_user_model().objects.get(username='local'); "
        f"print(create_workflow(admin, project, json.loads({json.dumps(body)!r})).public_id)"
    )
    return last_line(manage_shell(env, code))


def test_a_workflow_started_on_the_interactive_page_runs_in_its_session(page, brain):
    # given: a workflow that asks a question first
    workflow_id = create_workflow_row(
        brain.env,
        {
            "name": "ask-first",
            "goal": "Study ${input.topic}",
            "inputs": ["topic"],
            "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which ${input.topic}?"}],
        },
    )
    page.goto("/interactive/")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    # when: it is started with its input
    page.select_option("#workflow-id", workflow_id)
    page.fill("#workflow-input", '{"topic": "moons"}')
    page.get_by_role("button", name="Start a workflow").click()
    # then: the notice names its process and run, which is selected, and its tree is drawn
    expect(page.locator("#notice")).to_have_text(re.compile(r"^Started tp_\d+ \(run run_\d+\)\.$"))
    process_id = page.locator("#process-select").input_value()
    drawn = page.locator("#interactive-tree")
    expect(drawn).to_have_attribute("data-process", process_id)
    expect(drawn.locator("li.tree-node[data-status=BLOCKED] .node-title")).to_have_text("Scope")
    # and: input that is not JSON is refused on the page, before anything is sent
    page.fill("#workflow-input", "{topic")
    page.get_by_role("button", name="Start a workflow").click()
    expect(page.locator("#notice")).to_contain_text("The input is not JSON")
    screenshot(page, "interactive-workflow")


def test_the_dashboard_shows_service_processes_only_under_their_filter(page, brain):
    # given: a process of the service recipe agrajag in a session of the person logged in
    made = manage_shell(
        brain.env,
        "from processes.actions.create import create_process; "
        "from django.contrib.auth import get_user_model; "
        "from processes.actions.sessions import create_session; "
        "user = get_user_model().objects.get(username='local'); "
        "session = create_session(user, client_type='web', project_id='proj_default', "
        "chat=False); "
        "print(create_process(session, goal='check a tool', recipe='agrajag', "
        "start=False).public_id)",
    )
    service = last_line(made)
    page.goto("/")
    table = page.locator("#process-table")
    expect(table).to_have_attribute("data-loaded", "live")
    # then: the ordinary list, refreshed, leaves it out
    expect(page.locator(f"#process-table tr[data-process='{service}']")).to_have_count(0)
    # when: the person picks the service filter
    page.select_option("#category", "service")
    # then: it is listed, alone, and still after the list refreshed
    expect(page).to_have_url(re.compile(r"category=service"))
    expect(table).to_have_attribute("data-category", "service")
    expect(table).to_have_attribute("data-loaded", "live")
    expect(page.locator("#process-table tbody tr")).to_have_count(1)
    expect(page.locator(f"#process-table tr[data-process='{service}']")).to_contain_text("agrajag")
    screenshot(page, "dashboard-service-filter")
