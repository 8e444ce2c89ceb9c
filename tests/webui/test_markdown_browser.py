"""Markdown on the pages a person reads it on, in a real browser (Debian's Chromium, Playwright)
against a real Brain on the scripted provider: the inbox page (rendered by the server,
webui/conversation.py), the interactive page's inbox panel and the web chat (rendered in the
browser from the WebSocket's plain text, webui/static/webui/markdown.js). Headings, bold and
tables are HTML, no `**` or `|---|` is left in the text, and what would run (a script, an
event handler, a javascript: link) or fetch (an image) is gone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.brain import Brain, post_inbox_item
from tests.support.browser import CHROMIUM, MISSING, check_both_sizes, start_chat_brain
from tests.support.markdown_sample import SATURN_REPORT

pytestmark = pytest.mark.embedded_brain

if not CHROMIUM.exists():
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect

# What a model or a process might write that must neither run nor fetch anything.
UNSAFE = (
    '<script>window.pwned = 1</script><img src="x" onerror="window.pwned = 2">'
    ' <a href="javascript:window.pwned = 3">click</a>'
)
ANSWER = SATURN_REPORT + "\n" + UNSAFE
BODY = (
    "## Findings\n\n"
    "The **cache** is cold.\n\n"
    "| step | seconds |\n"
    "|---|---|\n"
    "| load | 1.5 |\n"
    "| warm | 0.2 |\n\n" + UNSAFE
)
# The answer streams a word every 0.1 s, so the test sees it plain before it is complete.
RULES = [{"match": "^markdown please", "reply": ANSWER, "delay_per_delta": 0.1}]


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brain]:
    """A Brain whose chat answers `markdown please` with ANSWER; anything else is echoed."""
    var_dir = tmp_path_factory.mktemp("markdown-brain")
    script = var_dir / "llm.yaml"
    script.write_text(yaml.safe_dump(RULES))
    running = start_chat_brain(var_dir, VANCETOPE_LLM="scripted", VANCETOPE_LLM_SCRIPT=str(script))
    yield running
    running.stop()


def open_chat(page: Any) -> str:
    """A new chat of the tab's own (a plain visit would go back into another test's)."""
    page.goto("/interactive/?new=1")
    root = page.locator("#interactive")
    expect(root).to_have_attribute("data-connection", "open")
    return str(root.get_attribute("data-chat-process"))


def assert_rendered_safely(page: Any, shown: Any, heading: str, strong: str) -> None:
    """`shown` holds the rendered Markdown: a heading, bold text and a table as HTML, none of
    the Markdown's marks left in its text, and nothing of UNSAFE that runs or fetches."""
    expect(shown.locator(heading)).to_have_count(1)
    expect(shown.locator("strong")).to_have_text(strong)
    expect(shown.locator("table")).to_have_count(1)
    expect(shown.locator("table th")).to_have_count(2)
    expect(shown.locator("table tbody tr")).to_have_count(2)
    text = shown.inner_text()
    assert "**" not in text
    assert "|---|" not in text
    assert "---" not in text
    assert "#" not in text
    assert shown.locator("script, img, [onerror], a[href^='javascript']").count() == 0
    assert "<script>" not in shown.inner_html()
    # the link's text stays, without what it would have run
    expect(shown.locator("a")).to_have_text("click")
    assert shown.locator("a").get_attribute("rel") == "noopener noreferrer"
    assert page.evaluate("window.pwned") is None


def test_the_inbox_page_shows_an_items_body_as_sanitised_markdown(page, brain):
    # given an item whose body is Markdown, with a script and a handler in it
    chat = open_chat(page)
    item_id = post_inbox_item(brain.env, chat, "OUTPUT_TEXT", "Cache report", BODY)
    # when the person opens the inbox page
    page.goto("/inbox/")
    card = page.locator(f"li[data-item='{item_id}']")
    expect(card).to_contain_text("Cache report")
    body = card.locator(".body.markdown")
    # then the body is HTML: the heading, the bold word and the table, nothing that runs
    assert_rendered_safely(page, body, "h2", "cache")
    expect(body.locator("h2")).to_have_text("Findings")
    expect(body.locator("table td")).to_have_text(["load", "1.5", "warm", "0.2"])
    check_both_sizes(page, "markdown-inbox")


def test_the_interactive_inbox_panel_shows_an_items_body_as_sanitised_markdown(page, brain):
    # given an item whose body is Markdown, posted while the interactive page is open
    chat = open_chat(page)
    toggle = page.locator("#inbox-toggle")
    expect(toggle).to_be_enabled()
    item_id = post_inbox_item(brain.env, chat, "APPROVAL", "Ship it?", BODY)
    # when the panel opens (the items over the WebSocket, rendered in the browser)
    toggle.click()
    body = page.locator(f"#inbox-panel li[data-item='{item_id}'] .body.markdown")
    # then the body is rendered and cleaned as on the inbox page
    assert_rendered_safely(page, body, "h2", "cache")
    expect(body.locator("table td")).to_have_text(["load", "1.5", "warm", "0.2"])


def test_the_web_chat_shows_an_answer_as_sanitised_markdown_live_and_after_a_reload(page):
    # given the chat open
    open_chat(page)
    # when the answer streams in
    page.fill("#chat-input", "markdown please")
    page.press("#chat-input", "Enter")
    # then while it streams it is plain text, the Markdown's marks in it
    streaming = page.locator("#chat-log .message.role-assistant.streaming .text")
    expect(streaming).to_contain_text("**95")
    assert streaming.locator("strong").count() == 0
    # and once complete it is Markdown: heading, bold, table, a list, nothing unsafe
    final = page.locator("#chat-log .message.role-assistant[data-final=true]").last
    answer = final.locator(".text.markdown")
    assert_rendered_safely(page, answer, "h1", "95 moons")
    expect(answer.locator("h1")).to_have_text("Saturn report")
    expect(answer.locator("em")).to_have_text("7 rings")
    expect(answer.locator("table td")).to_have_text(["moons", "95", "rings", "7"])
    expect(answer.locator("li")).to_have_text(["first", "second"])
    assert int(str(final.get_attribute("data-deltas"))) > 3
    # the person's own words stay as they typed them
    expect(page.locator("#chat-log .message.role-user .text")).to_have_text("markdown please")
    expect(page.locator("#process-status")).to_have_text("IDLE")
    check_both_sizes(page, "markdown-chat")
    # when the page is reloaded (the transcript comes back as the session's missed events)
    page.reload()
    root = page.locator("#interactive")
    expect(root).to_have_attribute("data-session-how", "resumed")
    # then the stored answer is Markdown again
    replayed = page.locator("#chat-log .message.role-assistant").last.locator(".text.markdown")
    assert_rendered_safely(page, replayed, "h1", "95 moons")
    expect(replayed.locator("table td")).to_have_text(["moons", "95", "rings", "7"])
    expect(page.locator("#chat-log .message.role-user .text")).to_have_text(
        re.compile("^markdown please$")
    )
