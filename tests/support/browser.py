"""The web UI in a real browser, shared by the browser tests: Debian's Chromium
(/usr/bin/chromium) driven by Playwright (which never downloads a browser here), a real Brain
started as an OS process with a known password for user `local`, screenshots in
test-artifacts/, and the checks every page a person reads must pass at both screen sizes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.brain import (
    ROOT,
    Brain,
    CeleryWorker,
    bootstrap,
    brain_env,
    free_port,
    manage_shell,
    run_services,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts"
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
# The password of user `local` on the chat tests' Brain (tests/webui/conftest.py).
CHAT_PASSWORD = "pw-browser-test"
MISSING = "browser tests need Debian's Chromium at /usr/bin/chromium (apt-get install chromium)"


@contextmanager
def running_brain(
    var_dir: Path, name: str, password: str, rules: list[dict[str, Any]] | None = None
) -> Iterator[tuple[Brain, str]]:
    """A Brain on the scripted provider (with these rules, if any) and its bootstrap token;
    with DATABASE_URL and REDIS_URL set it runs distributed on them (a scratch database, a
    Celery worker on a queue of its own), else on its own SQLite file."""
    extra = {"VANCETOPE_LLM": "scripted"}
    if rules is not None:
        script = var_dir / "script.yaml"
        script.write_text(yaml.safe_dump(rules))
        extra["VANCETOPE_LLM_SCRIPT"] = str(script)
    with run_services(name) as services:
        env = brain_env(var_dir, **extra, **services)
        token = bootstrap(env)
        set_local_password(env, password)
        worker = CeleryWorker(env, services["VANCETOPE_TASK_QUEUE"]) if services else None
        brain = Brain(env, free_port())
        try:
            yield brain, token
        finally:
            brain.stop()
            if worker is not None:
                worker.stop()


def log_in(page: Any, password: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", "local")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


def open_tab(browser: Any, base_url: str, password: str, viewport: dict[str, int] = DESKTOP) -> Any:
    """A new browser context on `base_url` (20 s default timeout) and its one tab, logged in
    as user `local`; close it with `tab.context.close()`."""
    context = browser.new_context(viewport=viewport, base_url=base_url)
    context.set_default_timeout(20_000)
    tab = context.new_page()
    log_in(tab, password)
    return tab


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"webui-{name}.png"), full_page=True)


def reading_problems(page: Any) -> list[str]:
    """What keeps a person from reading the page as shown: raw JSON among its visible text,
    or a page wider than the screen (a sideways scroll)."""
    shown = page.evaluate(
        "() => ({text: document.body.innerText, wide: document.documentElement.scrollWidth,"
        " screen: window.innerWidth})"
    )
    problems = []
    if '{"' in shown["text"]:
        at = shown["text"].index('{"')
        problems.append(f"raw JSON shown: {shown['text'][max(at - 60, 0) : at + 80]!r}")
    if shown["wide"] > shown["screen"]:
        problems.append(f"{shown['wide']} px wide on a {shown['screen']} px screen")
    return problems


def check_both_sizes(page: Any, name: str) -> None:
    """Screenshots at desktop and phone (390×844) size, each checked by reading_problems."""
    for size, suffix in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page.set_viewport_size(size)
        page.wait_for_timeout(150)  # a relayout after the resize
        screenshot(page, f"{name}-{suffix}")
        problems = reading_problems(page)
        assert not problems, f"{name} at {suffix} size: {problems}"
    page.set_viewport_size(DESKTOP)


def start_chat_brain(var_dir: Path, **env: str) -> Brain:
    """A Brain in `var_dir` with `env` (on the embedded default) whose user `local` logs in
    with CHAT_PASSWORD; the caller stops it."""
    settings = brain_env(var_dir, **env)
    bootstrap(settings)
    set_local_password(settings, CHAT_PASSWORD)
    return Brain(settings, free_port())


def set_local_password(env: dict[str, str], password: str) -> None:
    """The bootstrap's user `local` logs in with `password` (the bootstrap prints its own)."""
    manage_shell(
        env,
        "from django.contrib.auth import get_user_model; "
        "user = get_user_model().objects.get(username='local'); "
        f"user.set_password({password!r}); user.save()",
    )
