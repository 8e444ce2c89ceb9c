"""The web chat's Undo button in a real browser (Debian's Chromium, Playwright) against a real
Brain: the last turn leaves the chat, its message comes back into the input, and the admin
shows the undone messages greyed."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.browser import CHROMIUM, MISSING, screenshot

pytestmark = pytest.mark.embedded_brain

if not CHROMIUM.exists():
    pytest.skip(MISSING, allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect


def test_undo_takes_the_last_turn_out_of_the_chat_and_puts_the_message_back(page: Any):
    # given the chat page of a person logged in (the `page` fixture logs in)
    page.goto("/interactive/")
    expect(page.locator("#interactive")).to_have_attribute("data-connection", "open")
    undo = page.locator("#chat-undo")
    log = page.locator("#chat-log")
    for text in ("first thing", "second thing"):
        page.fill("#chat-input", text)
        page.press("#chat-input", "Enter")
        expect(log.locator(".message.role-assistant[data-final=true]").last).to_have_text(
            re.compile(f"echo: {text}")
        )
    expect(undo).to_be_enabled()
    # when the person clicks Undo
    undo.click()
    # then the second exchange leaves the chat and its message is back in the input
    expect(page.locator("#notice")).to_contain_text("Undone: your message #2 (2 messages)")
    expect(page.locator("#chat-input")).to_have_value("second thing")
    expect(log).not_to_contain_text("echo: second thing")
    expect(log).to_contain_text("echo: first thing")
    screenshot(page, "chat-undone-desktop")
    # and sent again as edited, it is answered
    page.fill("#chat-input", "second thing, edited")
    page.press("#chat-input", "Enter")
    expect(log).to_contain_text("echo: second thing, edited")
    expect(log.locator(".message.role-user")).to_have_count(2)
    # the admin shows the undone messages greyed, with who undid them
    chat = page.locator("#interactive").get_attribute("data-chat-process")
    page.goto(f"/admin/processes/thinkprocess/{chat.removeprefix('tp_')}/change/")
    greyed = page.locator("td.field-message span.undone")
    expect(greyed).to_have_count(2)
    expect(greyed.first).to_have_text("second thing")
    expect(page.locator("td.field-undone").nth(2)).to_contain_text("by local at ")
    screenshot(page, "admin-undone")
