"""The dashboard's trees and the interactive page's chat in a real browser (Debian's Chromium,
Playwright) against a real Brain (tests/webui/conftest.py): a process with fifty workers is one
row with its count, the workers folded (the page stays short) until the fold is opened, nested
by parent, and open still after the list refreshed; a status filter shows the matching workers
under their tree's row; and visiting the interactive page again (a reload, a second tab,
another browser) goes back into the person's chat instead of leaving one more idle arthur
behind, until a new chat is asked for. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.e2e.brain import last_line, manage_shell
from tests.support.browser import (
    CHAT_PASSWORD,
    CHROMIUM,
    MISSING,
    check_both_sizes,
    open_tab,
    screenshot,
)

if not CHROMIUM.exists():
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect
pytestmark = pytest.mark.embedded_brain

# The folded page of a tree of fifty workers stays under this height (unfolded it is far
# taller: each worker is a line of its own).
FOLDED_HEIGHT = 2_000

# A top-level ford with 49 workers (42 DONE, 2 FAILED, 2 PAUSED, 3 not started) and one worker
# under the first (DONE), through the service layer; and a second top-level process on its own.
MAKE_TREE = """
import json
from django.contrib.auth import get_user_model
from processes.actions.create import create_process
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
user = get_user_model().objects.get(username='local')
session = create_session(user, client_type='cli', project_id='proj_default', chat=False)
calm = create_process(session, goal='nothing paused here', engine='ford', start=False)
root = create_process(session, goal='survey the moons of Saturn', engine='ford', start=False)
workers = [
    create_process(session, goal=f'count moon {n}', engine='ford', parent=root, start=False)
    for n in range(49)
]
nested = create_process(session, goal='count moonlets', engine='ford', parent=workers[0],
                        start=False)
done = [worker.pk for worker in workers[:42]] + [nested.pk]
ThinkProcess.objects.filter(pk__in=done).update(status='CLOSED', close_reason='DONE')
failed = [worker.pk for worker in workers[42:44]]
ThinkProcess.objects.filter(pk__in=failed).update(status='CLOSED', close_reason='FAILED')
paused = [worker.pk for worker in workers[44:46]]
ThinkProcess.objects.filter(pk__in=paused).update(status='PAUSED')
print(json.dumps({'root': root.public_id, 'calm': calm.public_id, 'first': workers[0].public_id,
                  'nested': nested.public_id, 'failed': [f'tp_{pk}' for pk in failed],
                  'paused': [f'tp_{pk}' for pk in paused],
                  'waiting': workers[48].public_id}))
"""


def page_height(page: Any) -> int:
    return int(page.evaluate("document.body.scrollHeight"))


def arthurs(page: Any) -> int:
    """How many arthur (chat) processes the logged-in person has, over REST."""
    response = page.request.get("/api/processes?engine=arthur&limit=1")
    assert response.status == 200, response.text()
    return int(response.json()["count"])


def bound(page: Any) -> tuple[str, str]:
    """The session the interactive page in `page` is bound to, and how (created, resumed)."""
    root = page.locator("#interactive")
    expect(root).to_have_attribute("data-connection", "open")
    expect(root).to_have_attribute("data-session-how", re.compile(r"^(created|resumed)$"))
    return str(root.get_attribute("data-session")), str(root.get_attribute("data-session-how"))


def test_a_tree_of_fifty_workers_is_one_short_row_until_it_is_opened(page, brain):
    made = json.loads(last_line(manage_shell(brain.env, MAKE_TREE)))
    root, first, nested = made["root"], made["first"], made["nested"]
    # when the person opens the dashboard
    page.goto("/")
    table = page.locator("#process-table")
    expect(table).to_have_attribute("data-loaded", "live")
    tree = table.locator(f"tbody.tree[data-tree='{root}']")
    # then the tree is one row and its count, its workers hidden, the page short
    expect(tree.locator("tr.tree-root")).to_have_count(1)
    expect(tree.locator("tr.tree-root .goal")).to_have_text("survey the moons of Saturn")
    fold = tree.locator("details.tree-fold")
    expect(fold.locator("summary")).to_have_text("50 workers: 43 DONE, 3 INIT, 2 FAILED, 2 PAUSED")
    expect(fold).not_to_have_attribute("open", "")
    expect(fold.locator(f"li[data-process='{first}']")).to_be_hidden()
    expect(table.locator(f"tr[data-process='{first}']")).to_have_count(0)
    folded = page_height(page)
    assert folded < FOLDED_HEIGHT, f"the folded dashboard is {folded} px tall"
    check_both_sizes(page, "dashboard-trees-folded")
    # when the fold is opened
    fold.locator("summary").click()
    # then every worker is listed, the nested one inside its parent's line
    expect(fold.locator(f"li[data-process='{first}']")).to_be_visible()
    expect(
        fold.locator(f"li[data-process='{first}'] > ul li[data-process='{nested}']")
    ).to_be_visible()
    expect(fold.locator("li[data-process]")).to_have_count(50)
    expect(fold.locator(f"li[data-process='{made['failed'][0]}'] .status")).to_have_text("CLOSED")
    assert page_height(page) > folded + 1_000
    screenshot(page, "dashboard-trees-open-desktop")
    # and it stays open when the list is refreshed (its rows put in place again)
    page.evaluate(f"document.querySelector(\"tbody.tree[data-tree='{root}']\").dataset.old = '1'")
    expect(table.locator(f"tbody.tree[data-tree='{root}'][data-old]")).to_have_count(0)
    expect(tree.locator("details.tree-fold")).to_have_attribute("open", "")
    expect(tree.locator(f"li[data-process='{nested}']")).to_be_visible()
    # when the person filters for PAUSED
    page.select_option("#status", "PAUSED")
    expect(page).to_have_url(re.compile(r"/\?status=PAUSED"))
    expect(table).to_have_attribute("data-loaded", "live")
    # then the tree is there for its two paused workers, shown as rows under its own, which
    # is only the context; the tree without a paused process is not listed
    expect(table.locator(f"tr.tree-root.context[data-process='{root}']")).to_have_count(1)
    for paused in made["paused"]:
        row = table.locator(f"tr.match.under[data-process='{paused}']")
        expect(row).to_be_visible()
        expect(row).to_contain_text(f"under {root}")
        expect(row.locator(".status")).to_have_text("PAUSED")
    expect(table.locator("tr.match")).to_have_count(2)
    expect(table.locator(f"tbody.tree[data-tree='{made['calm']}']")).to_have_count(0)
    check_both_sizes(page, "dashboard-trees-paused")
    # and the not-started worker is found under its tree with the INIT filter
    page.select_option("#status", "INIT")
    expect(table.locator(f"tr.match.under[data-process='{made['waiting']}']")).to_be_visible()
    expect(table.locator(f"tr.match[data-process='{made['calm']}']")).to_be_visible()


def test_visiting_the_chat_again_goes_back_into_it_until_a_new_one_is_asked_for(
    page, browser, brain
):
    before = arthurs(page)
    # given the person's chat, opened once
    page.goto("/interactive/")
    session, _ = bound(page)
    page.fill("#chat-input", "remember the moons")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-log")).to_contain_text("echo: remember the moons")
    after_first = arthurs(page)
    assert after_first <= before + 1
    # when the page is visited again: a navigation in the same tab, a second tab while the
    # first is still open, and another browser of the same person
    page.goto("/")
    page.goto("/interactive/")
    assert bound(page) == (session, "resumed")
    second = page.context.new_page()
    second.goto("/interactive/")
    assert bound(second) == (session, "resumed")
    expect(second.locator("#chat-log")).to_contain_text("echo: remember the moons")
    second.fill("#chat-input", "still the same chat")
    second.press("#chat-input", "Enter")
    expect(second.locator("#chat-log")).to_contain_text("echo: still the same chat")
    second.close()
    elsewhere = open_tab(browser, brain.url, CHAT_PASSWORD)
    try:
        elsewhere.goto("/interactive/")
        assert bound(elsewhere) == (session, "resumed")
    finally:
        elsewhere.context.close()
    # then no arthur was added
    assert arthurs(page) == after_first
    # when a new chat is asked for, there is one more, and a plain visit goes back into it
    page.goto("/interactive/?new=1")
    new_session, how = bound(page)
    assert (how, new_session != session) == ("created", True)
    assert arthurs(page) == after_first + 1
    other = page.context.new_page()
    other.goto("/interactive/")
    assert bound(other) == (new_session, "resumed")
    other.close()
    assert arthurs(page) == after_first + 1
