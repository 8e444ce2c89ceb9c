"""One Markdown policy for the web UI: the browser's renderer (webui/static/webui/markdown.js,
for what arrives over the WebSocket) keeps the same allow-list as the server's
(webui/conversation.py, nh3), and the pages that render Markdown load it; the inbox page
renders an item's body on the server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nh3
import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from inbox.services import post_item
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy
from webui.conversation import ALLOWED_TAGS

MARKDOWN_JS = Path(__file__).resolve().parents[2] / "webui" / "static" / "webui" / "markdown.js"


def js_list(name: str) -> list[str]:
    """The array literal `const NAME = [...]` of markdown.js."""
    found = re.search(rf"const {name} = (\[[^\]]*\]);", MARKDOWN_JS.read_text())
    assert found, f"no {name} in markdown.js"
    return list(json.loads(found[1]))


def test_the_browser_keeps_the_servers_allow_list():
    assert sorted(js_list("TAGS")) == sorted(ALLOWED_TAGS)
    assert "img" not in js_list("TAGS")
    assert "script" not in js_list("TAGS")
    attributes = {name for tag in ALLOWED_TAGS for name in nh3.ALLOWED_ATTRIBUTES.get(tag, ())}
    assert sorted(js_list("ATTRIBUTES")) == sorted(attributes)
    assert sorted(js_list("SCHEMES")) == sorted(nh3.ALLOWED_URL_SCHEMES)
    assert "javascript" not in js_list("SCHEMES")


@pytest.mark.parametrize(
    "asset", ["markdown.js", "vendor/marked.umd.js", "vendor/purify.min.js", "inboxpanel.js"]
)
def test_the_markdown_scripts_are_found_by_the_static_files_finders(asset):
    assert finders.find(f"webui/{asset}")


@pytest.mark.django_db(transaction=True)
def test_the_interactive_page_loads_the_renderer_before_the_scripts_that_use_it(alice: Tenancy):
    client = Client()
    client.force_login(alice.user)
    page = client.get(reverse("webui:interactive")).content.decode()
    order = ["marked.umd.js", "purify.min.js", "markdown.js", "inboxpanel.js", "interactive.js"]
    positions = [page.index(f"/{name}") for name in order]
    assert positions == sorted(positions)


@pytest.mark.django_db(transaction=True)
def test_the_inbox_page_renders_an_items_body_as_sanitised_markdown(alice: Tenancy):
    session = create_session(
        alice.user,
        client_type="web",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="browser"),
    )
    assert session.chat_process_id is not None
    process = ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)
    body = "## Plan\n\n**Bold** step.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>x()</script>"
    item = post_item(process, "OUTPUT_TEXT", "Report", body)
    client = Client()
    client.force_login(alice.user)
    page = client.get(reverse("webui:inbox")).content.decode()
    card = page[page.index(f'data-item="{item.public_id}"') :]
    assert '<div class="body markdown"><h2>Plan</h2>' in card
    assert "<strong>Bold</strong> step." in card
    assert "<th>a</th>" in card
    assert "<td>2</td>" in card
    assert "**" not in card
    assert "|---|" not in card
    assert "<script>" not in card
    assert "x()" not in card
