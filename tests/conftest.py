"""Shared fixtures: a tenant with a user and token, clients, and waiting helpers.

Tests that need PostgreSQL or Redis run when DATABASE_URL / REDIS_URL are set (as .ci/run does)
and say why they skip otherwise. Lanes run on the in-process worker in every test run, against
whatever database and channel layer the settings name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from processes.actions import steer
from processes.capabilities import conversation_cache
from processes.capabilities.recall import forget_indexes
from processes.lane import dispatch, interrupts
from processes.lane.context_builder import forget_compactions
from processes.lane.driver import drive_lane
from processes.lane.worker import shutdown_worker
from processes.models import ThinkProcess
from processes.queries import forget_chat_process, forget_sessions
from processes.states import Status
from recipes_app.services import sync_bundled_recipes
from recipes_app.strategies import sync_bundled_strategies
from tests.e2e import brain as brain_processes
from tests.support.flush import install as keep_derived_rows_when_flushing
from tests.support.tenancy import Tenancy, open_session
from tests.support.tools import ToolReadingProvider
from vancetope import ratelimit
from vancetope.config.cascade import forget_cached as forget_cached_settings
from vancetope.llm.factory import reset_provider_cache
from vancetope.tools import health as tool_health


def pytest_configure(config: pytest.Config) -> None:
    """Passwords are hashed with MD5 in the tests' own process, as Django's testing docs advise:
    PBKDF2 takes about 0.4 s of CPU a user, and most tests make a few users. The Brains the
    tests start as OS processes keep the real hashers."""
    django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    keep_derived_rows_when_flushing()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked `embedded_brain` runs only in the SQLite run of .ci/run: it must not use
    the run's own database, or the PostgreSQL run would leave out a test of PostgreSQL."""
    for item in items:
        if item.get_closest_marker("embedded_brain") is None:
            continue
        uses_database = item.get_closest_marker("django_db") is not None or bool(
            {"db", "transactional_db"} & set(getattr(item, "fixturenames", ()))
        )
        if uses_database:
            raise pytest.UsageError(
                f"{item.nodeid} is marked embedded_brain but uses the run's database: "
                "the PostgreSQL + Redis run would leave it out"
            )


@pytest.fixture(scope="session", autouse=True)
def _end_stray_connections(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """Channels runs thread-sensitive database calls on one long-lived executor thread, which
    keeps its connection open like any worker thread would; PostgreSQL will not drop the test
    database while it is open, so end such sessions before pytest-django drops it."""
    yield
    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """SQLite leaves the test database's WAL and shared-memory files behind when pytest-django
    deletes the database while other threads' connections were open; remove them, so runs do
    not pile files up in var/."""
    database = django_settings.DATABASES["default"]
    if database["ENGINE"] != "vancetope.infra.sqlite_backend":
        return
    name = Path(database["TEST"]["NAME"])
    if not name.exists():
        for leftover in (Path(f"{name}-wal"), Path(f"{name}-shm")):
            leftover.unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _inprocess_worker(settings: Any) -> Iterator[None]:
    settings.VANCETOPE_WORKER = "inprocess"
    reset_provider_cache()
    # Revisions and ids start again with every test's database (SQLite hands the ids of a
    # rolled-back test out again): a worker's cached settings, session facts and tool
    # verdicts of an earlier test must not answer for this one's.
    forget_cached_settings()
    forget_sessions()
    tool_health.forget_cached()
    # Every test starts with no rate-limit counts (user ids are reused across tests).
    ratelimit.reset()
    # Nor with the conversations earlier tests' turns kept (their byte budget is shared).
    conversation_cache.clear()
    # And the compactions and recall indexes they kept, by process id.
    forget_compactions()
    forget_indexes()
    yield
    # Let running lanes finish and close their connections before the database is flushed.
    shutdown_worker(wait=True)
    reset_provider_cache()


@pytest.fixture
def script(settings: Any, tmp_path: Path) -> Callable[[list[dict[str, Any]]], None]:
    """Use a scripted-provider script (a list of rules, PROTOCOL's format) for this test."""

    def use(rules: list[dict[str, Any]]) -> None:
        path = tmp_path / "script.yaml"
        path.write_text(yaml.safe_dump(rules))
        settings.VANCETOPE_LLM_SCRIPT = str(path)
        reset_provider_cache()

    return use


@pytest.fixture
def recipes(db: Any) -> None:
    sync_bundled_recipes()
    sync_bundled_strategies()


@pytest.fixture
def operator(db: Any) -> Client:
    """A logged-in superuser, for the admin."""
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice(recipes: None) -> Tenancy:
    return Tenancy("alice")


@pytest.fixture
def bob(recipes: None) -> Tenancy:
    return Tenancy("bob")


@pytest.fixture
def scratch_database() -> Iterator[str]:
    """A throwaway PostgreSQL database on the DATABASE_URL server (its URL), dropped
    afterwards: for a Brain run as OS processes on the distributed runtime."""
    with brain_processes.scratch_database("scratch") as url:
        yield url


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[Any]], ToolReadingProvider]:
    """Install a ToolReadingProvider with the given script for every lane."""

    def install(script: list[Any]) -> ToolReadingProvider:
        provider = ToolReadingProvider(script)
        monkeypatch.setattr(
            "processes.lane.context_builder.get_provider", lambda config=None: provider
        )
        return provider

    return install


@pytest.fixture
def chat(alice: Any, settings: Any, monkeypatch: pytest.MonkeyPatch):
    """A chat session whose lane is driven here: wakes are recorded, not run elsewhere;
    streamed text is joined for a minute and interrupts are looked for once a minute, so a
    slow machine does not add statements."""
    settings.VANCETOPE_DELTA_INTERVAL_SECONDS = 60
    monkeypatch.setattr(interrupts, "BOUNDARY_CHECK_SECONDS", 60)
    session = open_session(alice)
    woken: list[int] = []
    monkeypatch.setattr(dispatch, "dispatch_drive", woken.append)
    # As a worker OS process that has not seen this session or process yet.
    forget_chat_process(session.pk)
    conversation_cache.clear()
    tool_health.forget_cached()

    def turn(text: str) -> tuple[CaptureQueriesContext, CaptureQueriesContext]:
        with CaptureQueriesContext(connection) as chatting:
            steer.send_chat(session.pk, text)
        assert woken.pop() == session.chat_process_id
        with CaptureQueriesContext(connection) as driving:
            assert drive_lane(session.chat_process_id) == 1
        process = ThinkProcess.objects.get(pk=session.chat_process_id)
        assert process.status == Status.IDLE
        assert process.waiting == 0
        return chatting, driving

    return turn
