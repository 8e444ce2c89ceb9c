"""The fold of a long chat in a real browser (Debian's Chromium, Playwright) against a real
Brain whose model has a small window: the chat shows "N earlier turns summarised" with the
summary behind it, its Undo button undoes the summary, and the process page shows what the
last call sent, part by part."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.brain import Brain
from tests.support.browser import CHROMIUM, MISSING, screenshot, start_chat_brain

pytestmark = pytest.mark.embedded_brain

if not CHROMIUM.exists():
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect

# Small enough that a few dozen short turns of the default chat (arthur) fill it.
WINDOW = 4096


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brain]:
    """A Brain on the scripted echo whose model's window is WINDOW tokens."""
    running = start_chat_brain(
        tmp_path_factory.mktemp("fold-brain"),
        VANCETOPE_LLM="scripted",
        VANCETOPE_LLM_CONTEXT_WINDOW=str(WINDOW),
    )
    yield running
    running.stop()


def test_a_long_chat_shows_its_fold_whose_undo_sends_the_turns_again(page: Any):
    # given the chat page of a person logged in
    page.goto("/interactive/")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    log = page.locator("#chat-log")
    fold = log.locator(".fold-line")
    # when the person chats until the conversation comes near the model's window
    turn = 0
    while fold.count() == 0 and turn < 80:
        turn += 1
        text = f"turn {turn}: " + " ".join(f"word{turn}x{i}" for i in range(40))
        page.fill("#chat-input", text)
        page.press("#chat-input", "Enter")
        expect(log.locator(".message.role-assistant[data-final=true]").last).to_have_text(
            re.compile(f"echo: turn {turn}:")
        )
    # then a line says how many earlier turns were summarised, the summary behind it
    expect(fold.first).to_contain_text(re.compile(r"\d+ earlier turns? summarised"))
    fold.first.locator("summary").click()
    expect(fold.first.locator(".text")).to_contain_text("turn 1:")
    screenshot(page, "chat-fold")
    # when the person undoes the summary (a compaction may still hold the lane a moment: the
    # button answers with a notice then, and works once it is done)
    undone = log.locator(".fold-line.undone")
    for _ in range(20):
        fold.first.locator("button.uncompact").click()
        try:
            expect(undone).to_have_count(1, timeout=2_000)
            break
        except AssertionError:
            continue
    # then the chat says it is undone, and the turns it folded are sent again
    expect(undone.first).to_contain_text("undone: the earlier turns are sent again")
    # and the process page shows what the next call sent, part by part
    page.fill("#chat-input", "and one more")
    page.press("#chat-input", "Enter")
    expect(log.locator(".message.role-assistant[data-final=true]").last).to_have_text(
        re.compile("echo: and one more")
    )
    chat = page.locator("#interactive").get_attribute("data-chat-process")
    page.goto(f"/processes/{chat}")
    parts = page.locator("#last-call-parts")
    expect(parts.locator("tr[data-part=step]")).to_have_count(1)
    expect(parts.locator("tr[data-part=recent]")).to_have_count(1)
    expect(page.locator("#last-call")).to_contain_text(f"a {WINDOW}-token window")
    screenshot(page, "process-last-call")
