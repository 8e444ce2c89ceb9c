"""The memory search and a thinking space a person starts, in a real browser (Debian's
Chromium, Playwright) against a real Brain on the scripted provider, at desktop and phone
(390×844) size: a search marks the words it found and rings its hits on the knowledge graph,
whose nodes are labelled by their text; the chat's "Start a thinking space" makes the chat a
space's root, its suggested branches are listed by title beside the map with a legend, and a
branch is entered by its title. No page shows raw JSON or scrolls sideways. Screenshots go to
test-artifacts/."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.brain import Brain, manage_shell
from tests.support.browser import (
    CHROMIUM,
    MISSING,
    check_both_sizes,
    open_tab,
    running_brain,
)

PASSWORD = "pw-reading-memory"
SUGGESTED = [
    {"title": "Rings by colour", "handoff": "Look at the **colours** of the rings."},
    {"title": "Rings by age", "handoff": "Look at how old the rings are."},
]
RULES: list[dict[str, Any]] = [
    {"engine": "arthur", "match": r"^\[control: suggest", "tool_calls": [
        {"name": "thinking_suggest", "arguments": {"children": SUGGESTED}}]},
]  # fmt: skip
# Two memory items and an edge between them, through the memory services.
MEMORY = """
import json
from django.contrib.auth import get_user_model
from vancetope.memory import graph
from vancetope.memory.items import Source, write_item
from vancetope.memory.models import EdgeAuthor, EdgeType, SourceKind
from vancetope.memory.scopes import person_reach, person_target

user = get_user_model().objects.get(username="local")
target = person_target(user, "project", "proj_default")
source = Source(SourceKind.USER, "local")
leave = write_item(target, "Everyone gets twenty-eight days of leave a year.", source)
office = write_item(target, "The office closes between Christmas and New Year.", source)
reach = person_reach(user)
graph.add_edge(EdgeType.CONTRADICTS, graph.get_visible_node(reach, leave.public_id),
               graph.get_visible_node(reach, office.public_id), 0.4, "closed days",
               graph.Author(EdgeAuthor.USER, "local"))
print(json.dumps({"leave": leave.public_id, "office": office.public_id}))
"""

if not CHROMIUM.exists():
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect
pytestmark = pytest.mark.embedded_brain


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brain]:
    var_dir = tmp_path_factory.mktemp("reading-memory")
    with running_brain(var_dir, "readmem", PASSWORD, RULES) as (running, _):
        yield running


@pytest.fixture
def page(brain: Brain, browser: Any) -> Iterator[Any]:
    """A tab of a browser context of its own, logged in."""
    tab = open_tab(browser, brain.url, PASSWORD)
    yield tab
    tab.context.close()


def test_a_memory_search_marks_its_words_and_rings_its_hits_on_the_graph(page, brain):
    made = json.loads(manage_shell(brain.env, MEMORY).strip().splitlines()[-1])
    page.goto("/memory/")
    graph = page.locator("#graph-map")
    expect(graph).to_have_attribute("data-labelled", "true")
    # then the graph's nodes are labelled by their text, not their ids
    leave_node = graph.locator(f".graph-node[data-node='{made['leave']}']")
    expect(leave_node.locator("text")).to_have_text(re.compile(r"^Everyone gets twenty-"))
    # when the person searches
    page.fill("#memory-search-q", "leave days")
    page.click("#memory-search")
    results = page.locator("#memory-search-results")
    expect(results).to_have_attribute("data-state", "done")
    hit = results.locator(f".search-hit[data-node='{made['leave']}']")
    # then the hit shows its text with the words searched for marked
    expect(hit.locator("mark")).to_have_text(["days", "leave"])
    # and is ringed on the graph, and opened there
    expect(graph.locator(f".graph-node.hit[data-node='{made['leave']}']")).to_have_count(1)
    hit.locator(".search-open").click()
    expect(page.locator("#graph-detail")).to_contain_text("twenty-eight days of leave")
    check_both_sizes(page, "reading-memory-search")


def test_a_person_starts_a_thinking_space_and_enters_a_branch_by_its_title(page):
    page.goto("/interactive/?new=1")
    expect(page.locator("#interactive")).to_have_attribute("data-session-how", "created")
    root_session = page.locator("#interactive").get_attribute("data-session")
    page.fill("#chat-input", "where to take the ring study")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-log")).to_contain_text("echo: where to take the ring study")
    # when the person starts a thinking space from the chat
    start = page.locator("#space-start")
    expect(start).to_be_visible()
    start.click()
    # then the chat is the root of a space whose suggested branches show by title
    outline = page.locator("#space-outline")
    expect(outline.locator(".space-branch-title")).to_have_text(
        [re.compile("."), "Rings by colour", "Rings by age"]
    )
    expect(outline.locator(".space-here")).to_have_count(1)
    expect(start).to_be_hidden()
    # with a legend of what each colour means
    legend = page.locator("#space-legend li")
    expect(legend).to_have_count(6)
    expect(legend.first).to_have_text("active")
    expect(page.locator("#chat-log .message[data-speaker=control]")).to_contain_text(
        "control: suggest"
    )
    expect(page.locator("#chat-log .message.role-user")).to_have_count(1)
    check_both_sizes(page, "reading-space")
    # when the person enters a branch by its title
    page.get_by_role("button", name="Enter the branch Rings by age").click()
    # then the tab moves into that branch's own conversation
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    expect(page.locator("#interactive")).not_to_have_attribute("data-session", root_session)
    here = page.locator("#space-outline .space-branch-line", has=page.locator(".space-here"))
    expect(here.locator(".space-branch-title")).to_have_text("Rings by age")
    check_both_sizes(page, "reading-space-branch")
