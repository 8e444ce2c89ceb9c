"""The thinking-space branch map of the interactive page in a real browser (Debian's Chromium,
driven by Playwright) against a real Brain OS process with the scripted provider: one colour per
state, selection beside the map, the space-* controls, the explicit open of a node's
conversation, and a phone-sized screen. Screenshots go to test-artifacts/.

With DATABASE_URL and REDIS_URL set the Brain runs distributed on them (a scratch PostgreSQL
database, a Celery worker on a queue of its own); else on its own SQLite file."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.brain import (
    Brain,
    CeleryWorker,
    bootstrap,
    brain_env,
    free_port,
    manage_shell,
    run_services,
)
from tests.support.browser import CHROMIUM, open_tab, screenshot
from tests.support.waiting import wait_until

PASSWORD = "pw-space-map"
STORED = "vancetope.interactive.session"
# The root's agent writes a retried fork's Handoff; a node's agent its checkpoint and return.
RULES = [
    {"engine": "arthur", "match": r"^\[control: fork handoff",
     "tool_calls": [{"name": "thinking_fork_handoff", "arguments": {"handoff": "Forked."}}]},
    {"engine": "arthur", "match": r"^\[control: checkpoint",
     "tool_calls": [{"name": "thinking_checkpoint", "arguments": {"handoff": "Fresh state."}}]},
    {"engine": "arthur", "match": r"^\[control: return",
     "tool_calls": [{"name": "thinking_return", "arguments": {"handoff": "Final word."}}]},
    # A blank branch's first prompt: a slow answer, so the page sees the turn run.
    {"engine": "arthur", "match": "^first words", "reply": "Begun.", "delay": 6},
    {"engine": "arthur", "reply": "ok"},
]  # fmt: skip
# One node per colour, grown through the spaces services; the locks of a refresh and of a
# return are taken without ordering their control turn (_order patched), so they stay held.
SETUP = """
import json
from unittest import mock
from django.contrib.auth import get_user_model
from processes.models import ConversationMessage, ThinkProcess
from sessions_app.services import FingerprintData
from processes.actions.sessions import create_session
from spaces.actions import agent, human
from spaces.models import ThinkingNode

def plant(node, text):
    start = ConversationMessage.objects.filter(process_id=node.chat_process_id).count()
    ConversationMessage.objects.create(process_id=node.chat_process_id, index=start, role="user",
                                       content=text)
    ThinkProcess.objects.filter(pk=node.chat_process_id).update(conversation_length=start + 1)

user = get_user_model().objects.get(username="local")
session = create_session(user, client_type="web", project_id="proj_default",
                         fingerprint=FingerprintData(machine_id=MACHINE), recipe="arthur")
root = agent.start_space(session.chat_process_id).root
made = {}
for title in ["Blue", "Amber", "Violet", "Indigo", "Gray"]:
    made[title] = agent.split(root.chat_process_id, title, "Handoff of " + title + ".")[1]
agent.checkpoint(made["Amber"].chat_process_id, "Amber state.")
plant(made["Amber"], "amber talk")
agent.return_node(made["Gray"].chat_process_id, "Gray final.")
plant(ThinkingNode.objects.get(pk=root.pk), "root talk")
plant(made["Indigo"], "indigo talk")
with mock.patch("spaces.actions.human._order"):
    human.begin_checkpoint(ThinkingNode.objects.get(pk=made["Violet"].pk))
    human.begin_return(ThinkingNode.objects.get(pk=made["Indigo"].pk))
    human.split(ThinkingNode.objects.get(pk=root.pk), "Teal")
print(json.dumps({"session": session.public_id}))
"""

if not CHROMIUM.exists():
    pytest.skip(
        "browser tests need Debian's Chromium at /usr/bin/chromium", allow_module_level=True
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect


@pytest.fixture(scope="module")
def services() -> Iterator[dict[str, str]]:
    with run_services("spacemap") as found:
        yield found


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory, services: dict[str, str]) -> Iterator[Brain]:
    var_dir = tmp_path_factory.mktemp("space-map-brain")
    script = var_dir / "script.yaml"
    script.write_text(yaml.safe_dump(RULES))
    env = brain_env(var_dir, VANCETOPE_LLM="scripted", VANCETOPE_LLM_SCRIPT=str(script), **services)
    bootstrap(env)
    manage_shell(
        env,
        "from django.contrib.auth import get_user_model; "
        "user = get_user_model().objects.get(username='local'); "
        f"user.set_password({PASSWORD!r}); user.save()",
    )
    worker = CeleryWorker(env, services["VANCETOPE_TASK_QUEUE"]) if services else None
    running = Brain(env, free_port())
    if services:
        assert running.wait_healthy()["checks"]["broker"]["detail"] == "redis"
    yield running
    running.stop()
    if worker is not None:
        worker.stop()


@pytest.fixture
def page(brain: Brain, browser: Any) -> Iterator[Any]:
    """A tab of a browser context of its own (a browser id of its own), logged in."""
    tab = open_tab(browser, brain.url, PASSWORD, {"width": 1280, "height": 900})
    expect(tab.locator("h1")).to_have_text("Think processes")
    yield tab
    tab.context.close()


def node_of(page: Any, title: str) -> Any:
    return page.locator(f"#space-map .space-node[aria-label^='{title} (']")


def test_the_branch_map_colours_each_state_and_its_controls_work(page, brain):
    # given: the browser's interactive page, and a space rooted in a session of its machine
    page.goto("/interactive/")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    machine = page.evaluate("localStorage.getItem('vancetope.browser')")
    made = json.loads(
        manage_shell(brain.env, f"MACHINE = {machine!r}\n" + SETUP).strip().splitlines()[-1]
    )
    # when: the tab resumes the root's session
    page.evaluate(
        "([key, id]) => sessionStorage.setItem(key, JSON.stringify({sessionId: id}))",
        [STORED, made["session"]],
    )
    page.reload()
    expect(page.locator("#interactive")).to_have_attribute("data-session", made["session"])
    # then: the map shows the root in the middle and one colour per state
    card = page.locator("#space-card")
    expect(card).to_be_visible()
    expect(page.locator("#space-map .space-node")).to_have_count(7)
    looks = {
        "Root": ("active", "#2563eb"),
        "Blue": ("active", "#2563eb"),
        "Amber": ("checkpoint", "#d97706"),
        "Teal": ("pending", "#0d9488"),
        "Violet": ("refreshing", "#7c3aed"),
        "Indigo": ("returning", "#4338ca"),
        "Gray": ("returned", "#6b7280"),
    }
    for title, (look, colour) in looks.items():
        drawn = node_of(page, title)
        expect(drawn).to_have_attribute("data-look", look)
        expect(drawn.locator("circle")).to_have_attribute("fill", colour)
    centre = node_of(page, "Root").locator("circle")
    assert (centre.get_attribute("cx"), centre.get_attribute("cy")) == ("0", "0")
    screenshot(page, "space-map-states")
    # when: a node is selected
    node_of(page, "Amber").click()
    # then: its Handoffs show beside the map, and the conversation stays the root's
    detail = page.locator("#space-detail")
    expect(detail).to_contain_text("Handoff of Amber.")
    expect(detail).to_contain_text("Amber state.")
    expect(page.locator("#interactive")).to_have_attribute("data-session", made["session"])
    # when: Amber is asked to return (its agent's control turn calls thinking_return)
    page.click("#space-return")
    # then: it is gray, its returned Handoff shown
    expect(node_of(page, "Amber")).to_have_attribute("data-look", "returned")
    expect(detail).to_contain_text("Final word.")
    # when: Blue is renamed and split
    node_of(page, "Blue").click()
    page.fill("#space-rename-title", "Sky")
    # (while the title is typed another tab renames the root: the map is drawn again and
    # keeps what is typed)
    revision = int(page.locator("#space-card").get_attribute("data-revision"))
    other = page.context.new_page()
    other.goto(f"/interactive/?session={made['session']}")
    node_of(other, "Root").click()
    other.fill("#space-rename-title", "Trunk")
    other.click("#space-rename")
    expect(node_of(other, "Trunk")).to_have_count(1)
    other.close()
    expect(page.locator("#space-card")).to_have_attribute("data-revision", str(revision + 1))
    expect(node_of(page, "Trunk")).to_have_count(1)
    expect(page.locator("#space-rename-title")).to_have_value("Sky")
    page.click("#space-rename")
    expect(node_of(page, "Sky")).to_have_count(1)
    page.fill("#space-split-title", "Leaf")
    page.click("#space-split")
    expect(node_of(page, "Leaf")).to_have_attribute("data-look", "active")
    node_of(page, "Sky").click()
    # when: Sky, whose conversation has not begun, is asked to return
    page.click("#space-return")
    # then: the refusal is the page's notice, and nothing changed
    expect(page.locator("#notice")).to_contain_text("the branch is empty")
    expect(node_of(page, "Sky")).to_have_attribute("data-look", "active")
    # when: Sky is checkpointed
    page.click("#space-checkpoint")
    # then: the checkpoint turn made it amber
    expect(node_of(page, "Sky")).to_have_attribute("data-look", "checkpoint")
    expect(detail).to_contain_text("Fresh state.")
    # when: the pending Teal's fork is retried
    node_of(page, "Teal").click()
    expect(page.locator("#space-retry")).to_be_visible()
    page.click("#space-retry")
    # then: the root's agent wrote its Handoff (a space-state event redrew the map)
    expect(node_of(page, "Teal")).to_have_attribute("data-look", "active")
    node_of(page, "Teal").click()
    expect(detail).to_contain_text("Forked.")
    screenshot(page, "space-map-controls")
    # when: Sky's conversation is opened explicitly
    node_of(page, "Sky").click()
    sky_session = detail.get_attribute("data-session")
    assert sky_session
    assert sky_session != made["session"]
    page.click("#space-open")
    # then: the tab is on Sky's session, with the same space drawn
    expect(page.locator("#interactive")).to_have_attribute("data-session", sky_session)
    expect(page.locator("#space-map .space-node")).to_have_count(8)
    # when: the screen is phone-sized
    page.set_viewport_size({"width": 390, "height": 844})
    # then: the map fits the width and a node can still be selected
    # (the map may still be drawn again for a space-state event of the opened session: its
    # box is read once the drawn map is on the page)
    box = wait_until(lambda: page.locator("#space-map svg").bounding_box(), timeout=20)
    assert box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    node_of(page, "Gray").click()
    expect(detail).to_contain_text("Gray final.")
    expect(page.locator("#space-retry")).to_be_hidden()
    expect(page.locator("#space-return")).to_be_disabled()
    screenshot(page, "space-map-phone")


# A root with a conversation and a blank branch (an agent's split: ready, with its Handoff).
BLANK_SETUP = """
import json
from django.contrib.auth import get_user_model
from processes.models import ConversationMessage, ThinkProcess
from sessions_app.services import FingerprintData
from processes.actions.sessions import create_session
from spaces.actions import agent

user = get_user_model().objects.get(username="local")
session = create_session(user, client_type="web", project_id="proj_default",
                         fingerprint=FingerprintData(machine_id=MACHINE), recipe="arthur")
root = agent.start_space(session.chat_process_id).root
ConversationMessage.objects.create(process_id=root.chat_process_id, index=0, role="user",
                                   content="root talk")
ThinkProcess.objects.filter(pk=root.chat_process_id).update(conversation_length=1)
child = agent.split(root.chat_process_id, "Blank", "Start from here.")[1]
print(json.dumps({"session": session.public_id, "child": child.public_id,
                  "childSession": "sess_%d" % child.session_id}))
"""


def test_a_blank_branch_takes_the_first_prompt_then_opens_and_shows_its_activity(page, brain):
    # given: the interactive page bound to a space's root, which has a blank branch
    page.goto("/interactive/")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    machine = page.evaluate("localStorage.getItem('vancetope.browser')")
    made = json.loads(
        manage_shell(brain.env, f"MACHINE = {machine!r}\n" + BLANK_SETUP).strip().splitlines()[-1]
    )
    page.evaluate(
        "([key, id]) => sessionStorage.setItem(key, JSON.stringify({sessionId: id}))",
        [STORED, made["session"]],
    )
    page.reload()
    expect(page.locator("#interactive")).to_have_attribute("data-session", made["session"])
    # when: the root is selected, then the blank branch
    node_of(page, "Root").click()
    activity = page.locator("#space-detail .space-activity")
    expect(activity).to_have_attribute("data-messages", "1")
    expect(page.locator("#space-open")).to_be_visible()
    expect(page.locator("#space-first-form")).to_be_hidden()
    node_of(page, "Blank").click()
    # then: its panel shows no message yet and asks for the first prompt, not to open it
    expect(activity).to_have_attribute("data-messages", "0")
    expect(activity).to_contain_text("0 messages")
    expect(page.locator("#space-first-form")).to_be_visible()
    expect(page.locator("#space-open")).to_be_hidden()
    expect(page.locator("#interactive")).to_have_attribute("data-session", made["session"])
    screenshot(page, "space-map-blank-branch")
    # when: the person types the first prompt and sends it
    page.fill("#space-first-text", "first words")
    page.click("#space-first-send")
    # then: the page opens the branch's session, whose chat has the prompt
    expect(page.locator("#interactive")).to_have_attribute("data-session", made["childSession"])
    expect(page.locator("#chat-log .message.role-user")).to_contain_text(["first words"])
    # and: with the branch selected, the map pulses while its turn runs
    node_of(page, "Blank").click()
    expect(node_of(page, "Blank")).to_have_class(re.compile(r"\brunning\b"))
    expect(activity).to_have_attribute("data-running", "true")
    screenshot(page, "space-map-running")
    # and: once answered, the pulse stops and the count is the prompt and the answer
    answers = page.locator("#chat-log .message.role-assistant")
    expect(answers).to_contain_text(["Begun."], timeout=20_000)
    expect(activity).to_have_attribute("data-messages", "2", timeout=20_000)
    expect(activity).to_have_attribute("data-running", "false")
    expect(node_of(page, "Blank")).not_to_have_class(re.compile(r"\brunning\b"))
    expect(page.locator("#space-first-form")).to_be_hidden()
