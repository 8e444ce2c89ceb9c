"""The pages a person reads, in a real browser (Debian's Chromium, Playwright) against a real
Brain on the scripted provider, at desktop and phone (390×844) size: the interactive chat says
who speaks, the process page reads as a conversation (Markdown made safe, tool calls as blocks,
old turns folded, run logs as rows, inbox items as cards), the chats list resumes a chat, a new
tab goes back into the browser's chat instead of opening one more, and the runs page has one
row per run with the chat turns folded. No page shows raw JSON or scrolls sideways.
Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.brain import Brain, post_inbox_item
from tests.support.browser import (
    CHROMIUM,
    MISSING,
    check_both_sizes,
    open_tab,
    running_brain,
)
from tests.support.waiting import wait_until

PASSWORD = "pw-reading"
UNSAFE = '<script>window.pwned = 1</script><img src="x" onerror="window.pwned = 2">'
RULES: list[dict[str, Any]] = [
    {"engine": "arthur", "match": "^count the rings$", "times": 1, "tool_calls": [
        {"name": "process_create", "arguments": {"recipe": "ford", "goal": "count the rings"}}]},
    {"engine": "arthur", "match": "^count the rings$", "reply": "I asked a worker."},
    {"engine": "arthur", "match": "^count the moons$", "times": 1, "tool_calls": [
        {"name": "process_create", "arguments": {"recipe": "ford", "goal": "count the moons"}}]},
    {"engine": "arthur", "match": "^count the moons$", "reply": "I asked a worker."},
    {"engine": "ford", "reply": "Seven rings, as far as anyone counted."},
    {"engine": "arthur", "match": "^format",
     "reply": "Here is **bold** and a list:\n\n- one\n- two\n\n" + UNSAFE},
]  # fmt: skip
ASKS = {
    "name": "asks",
    "goal": "Ask about ${input.topic}",
    "inputs": ["topic"],
    "tasks": [{"kind": "USER_INPUT", "title": "Scope", "goal": "Which ${input.topic}?"}],
}

if not CHROMIUM.exists():
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect
pytestmark = pytest.mark.embedded_brain


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Brain, str]]:
    with running_brain(tmp_path_factory.mktemp("reading"), "reading", PASSWORD, RULES) as found:
        yield found


@pytest.fixture
def page(brain: tuple[Brain, str], browser: Any) -> Iterator[Any]:
    """A tab of a browser context of its own (so a browser id of its own: no chat of another
    test is resumed), logged in to the module's Brain."""
    tab = open_tab(browser, brain[0].url, PASSWORD)
    yield tab
    tab.context.close()


def say(page: Any, text: str, answer: str | re.Pattern[str]) -> None:
    page.fill("#chat-input", text)
    page.press("#chat-input", "Enter")
    final = page.locator("#chat-log .message.role-assistant[data-final=true]").last
    expect(final.locator(".text")).to_have_text(answer)


def test_the_chat_labels_a_workers_goal_and_answer_and_never_as_the_persons(page):
    # given a new chat
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    # when the person asks for something a worker does
    page.fill("#chat-input", "count the rings")
    page.press("#chat-input", "Enter")
    log = page.locator("#chat-log")
    expect(log).to_contain_text("I asked a worker.")
    expect(log).to_contain_text("Seven rings, as far as anyone counted.")
    # then the worker's goal and its answer are labelled as the worker's, not as "you"
    goal = log.locator(".message[data-speaker=goal]")
    expect(goal).to_have_count(1)
    expect(goal.locator(".role")).to_have_text(re.compile(r"^goal of tp_\d+$"))
    expect(goal).not_to_have_class(re.compile("role-user"))
    worker = goal.get_attribute("data-process")
    expect(log.locator(f".message.role-assistant[data-process='{worker}'] .role")).to_have_text(
        f"{worker} answers"
    )
    expect(log.locator(".message.role-user")).to_have_count(1)
    expect(log.locator(".message.role-user .role")).to_have_text("you")
    # and a long chat folds its older turns behind one line
    for number in range(6):
        say(page, f"note {number}", f"echo: note {number}")
    toggle = log.locator(".fold-toggle button")
    expect(toggle).to_have_text(re.compile(r"^Show \d+ earlier messages$"))
    assert log.locator(".message:visible").count() == 12
    check_both_sizes(page, "reading-chat")
    toggle.click()
    expect(log.locator(".message[data-folded]")).to_have_count(0)


def test_the_process_page_reads_as_a_conversation_with_its_runs_and_items(page, brain):
    running, _ = brain
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    page.fill("#chat-input", "count the moons")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-log")).to_contain_text("Seven rings")
    for number in range(4):
        say(page, f"note {number}", f"echo: note {number}")
    # the chat shows the answer as sanitised Markdown too (tests/webui/test_markdown_browser.py)
    say(page, "format this", re.compile(r"^Here is bold and a list:"))
    assert page.evaluate("window.pwned") is None
    chat = page.locator("#interactive").get_attribute("data-chat-process")
    item = post_inbox_item(running.env, chat, "QUESTION", "Which **ring** first?", "Pick *one*.")
    # when the person opens the chat's process page
    page.goto(f"/processes/{chat}")
    conversation = page.locator("#conversation")
    # then Markdown is rendered and made safe: no script, no handler ran
    answer = conversation.locator(".message.speaker-assistant").last
    expect(answer.locator("strong")).to_have_text("bold")
    expect(answer.locator("li")).to_have_text(["one", "two"])
    assert conversation.locator("script").count() == 0
    assert conversation.locator("img[onerror]").count() == 0
    assert page.evaluate("window.pwned") is None
    # the old turns are folded, the person's words are "you" and the worker's start a block
    earlier = page.locator("#earlier-turns")
    expect(earlier.locator("> summary")).to_have_text(re.compile(r"^\d+ earlier messages$"))
    earlier.locator("> summary").click()
    call = conversation.locator(".tool-call[data-tool=process_create]")
    expect(call.locator("table.arguments tr")).to_have_count(2)
    expect(call.locator("table.arguments")).to_contain_text("goal")
    expect(call.locator("table.arguments")).to_contain_text("count the moons")
    expect(call.locator("details.fold pre.result")).to_be_hidden()
    call.locator("details.fold summary").click()
    expect(call.locator("pre.result")).to_contain_text("tp_")
    expect(conversation.locator(".message.speaker-person .role").first).to_contain_text("you")
    # times are local and relative
    expect(conversation.locator("time").first).to_have_attribute("data-local", "true")
    expect(conversation.locator("time").first).to_contain_text(re.compile(r"ago|now"))
    # the run logs are rows (status, trigger, duration, tokens), the item a card
    row = page.locator("#runs .run-row").first
    expect(row.locator(".status")).to_have_text("completed")
    expect(row.locator(".run-trigger")).to_have_text("user")
    expect(row.locator(".run-duration")).to_have_text(re.compile(r"^\d+\.\d s$"))
    expect(row.locator(".run-tokens")).to_have_text(re.compile(r"^\d+ tokens$"))
    card = page.locator(f"#inbox .item-card[data-item='{item}']")
    expect(card.locator("strong")).to_have_text("Which **ring** first?")
    expect(card.locator(".markdown em")).to_have_text("one")
    earlier.locator("> summary").click()  # folded again for the screenshots
    check_both_sizes(page, "reading-process")


def test_chats_are_listed_resumed_and_a_new_tab_goes_back_into_one(page):
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    say(page, "plan the week", "echo: plan the week")
    first = page.locator("#interactive").get_attribute("data-session")
    chat = page.locator("#interactive").get_attribute("data-chat-process")
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    say(page, "a second chat", "echo: a second chat")
    # when the person opens the chats list
    page.goto("/sessions/")
    rows = page.locator("#session-list .session-row")
    expect(rows.first.locator(".session-title")).to_have_text("a second chat")
    listed = page.locator(f".session-row[data-session='{first}']")
    expect(listed.locator(".session-title")).to_have_text("plan the week")
    check_both_sizes(page, "reading-sessions")
    # then Resume goes back into that chat, its conversation shown again
    listed.locator("a.resume").click()
    expect(page.locator("#interactive")).to_have_attribute("data-session", first)
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "resumed")
    expect(page.locator("#chat-log")).to_contain_text("echo: plan the week")
    # and an old process's "interactive mode" opens its own conversation
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    page.goto(f"/processes/{chat}")
    page.get_by_role("link", name=re.compile("in interactive mode")).click()
    expect(page.locator("#interactive")).to_have_attribute("data-session", first)
    expect(page.locator("#process-select")).to_have_value(chat)
    expect(page.locator("#chat-log")).to_contain_text("echo: plan the week")
    # when the tab is left and another tab visits the chat page, no session is added
    page.goto("/sessions/")
    before = page.locator("#session-list .session-row").count()
    other = page.context.new_page()
    other.goto("/interactive/")
    expect(other.locator("#interactive")).to_have_attribute("data-session-how", "resumed")
    other.close()
    page.reload()
    expect(page.locator("#session-list .session-row")).to_have_count(before)


def test_the_runs_page_has_a_row_per_run_and_folds_the_chat_turns(page, brain):
    # given two turns of a new chat, and a workflow's run
    running, token = brain
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    for number in range(2):
        say(page, f"turn {number}", f"echo: turn {number}")
    chat = page.locator("#interactive").get_attribute("data-chat-process")
    turns = wait_until(lambda: completed_runs(running, token, chat, 2), interval=0.2)
    workflow = post_json(running, "/api/workflows", token, ASKS)["id"]
    run = post_json(running, f"/api/workflows/{workflow}/run", token, {"input": {"topic": "moons"}})
    # when
    page.goto("/runs/")
    # then the workflow's run is a row of its own, the chat turns one folded row
    row = page.locator(f"#run-timeline > .run-row[data-run='{run['runId']}']")
    expect(row.locator(".run-trigger")).to_have_text("workflow · asks")
    folded = page.locator("#run-timeline > .run-fold")
    for turn in turns:
        folded = folded.filter(has=page.locator(f".run-row[data-run='{turn}']"))
    expect(folded).to_have_count(1)
    expect(folded.locator("summary")).to_have_text(re.compile(r"^\d+ chat turns, completed"))
    for turn in turns:
        expect(folded.locator(f".run-row[data-run='{turn}']")).to_be_hidden()
    assert page.locator("#run-timeline > .run-row[data-trigger=user]").count() == 0
    check_both_sizes(page, "reading-runs")


def completed_runs(running: Brain, token: str, process: str, count: int) -> list[str]:
    """The ids of the process's runs once there are `count` of them and all are completed
    (else none)."""
    runs = running.get(f"/api/runs?process={process}", token)["results"]
    done = [str(run["id"]) for run in runs if run["status"] == "completed"]
    return done if len(runs) >= count and len(done) == len(runs) else []


def post_json(running: Brain, path: str, token: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        running.url + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)
