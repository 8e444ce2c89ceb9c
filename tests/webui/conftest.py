"""Fixtures of the web UI tests: one Chromium per test module (skipped, with the reason, where
Debian's Chromium or Playwright is missing), the scripted Brain of the chat tests (one per
module), and a tab logged in to it (one per test)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.brain import Brain
from tests.support.browser import (
    CHAT_PASSWORD,
    CHROMIUM,
    CHROMIUM_ARGS,
    MISSING,
    open_tab,
    start_chat_brain,
)

# One slow rule so a test can watch a reply grow word by word, and a marvin tree whose two
# workers take a few seconds each, so the process page can watch it grow; everything else is
# echoed.
LLM_SCRIPT = """
- match: "^slowly"
  reply: "echo: slowly, one word after another, until the reply is complete"
  delay_per_delta: 0.15
- engine: marvin
  step: plan
  tool_calls:
    - name: plan_tasks
      arguments:
        tasks:
          - {kind: WORKER, title: "Count the <moons>", goal: "count the moons"}
          - {kind: WORKER, title: "Count the rings", goal: "count the rings"}
          - {kind: AGGREGATE, title: "Report"}
- engine: frankie
  step: report
  match: "count the moons"
  tool_calls:
    - name: report_result
      arguments: {summary: "95 moons.", findings: [], sources: [], confidence: 0.9}
- engine: frankie
  step: report
  match: "count the rings"
  tool_calls:
    - name: report_result
      arguments: {summary: "7 rings.", findings: [], sources: [], confidence: 0.9}
- engine: frankie
  match: "count the moons"
  reply: "95 moons."
  delay: 2.5
- engine: frankie
  match: "count the rings"
  reply: "7 rings."
  delay: 2.5
- engine: marvin
  step: aggregate
  reply: "Saturn: 95 moons, 7 rings."
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(MISSING)
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="browser tests need Playwright: pip install -e '.[dev]'"
    )
    # An assertion waits as long as an action does (20 s, tests.support.browser.open_tab), not
    # Playwright's 5 s: on CI's two shared cores a scripted reply can take longer than that.
    sync_api.expect.set_options(timeout=20_000)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brain]:
    """A Brain on the scripted provider with LLM_SCRIPT, user `local` with CHAT_PASSWORD."""
    var_dir = tmp_path_factory.mktemp("browser-brain")
    script = var_dir / "llm.yaml"
    script.write_text(LLM_SCRIPT)
    running = start_chat_brain(var_dir, VANCETOPE_LLM="scripted", VANCETOPE_LLM_SCRIPT=str(script))
    yield running
    running.stop()


@pytest.fixture
def page(brain: Brain, browser: Any) -> Iterator[Any]:
    """A tab of its own logged in to the chat Brain (a new browser context per test: its own
    cookies and storage, so the interactive page opens a session of its own), closed after."""
    tab = open_tab(browser, brain.url, CHAT_PASSWORD)
    yield tab
    tab.context.close()
