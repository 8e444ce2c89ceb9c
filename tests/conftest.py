"""Shared fixtures: a tenant with a user and token, clients, and waiting helpers.

Tests that need PostgreSQL or Redis run when DATABASE_URL / REDIS_URL are set (as .ci/run does)
and say why they skip otherwise. Lanes run on the in-process worker in every test run, against
whatever database and channel layer the settings name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from processes.lane.worker import shutdown_worker
from recipes_app.services import sync_bundled_recipes
from recipes_app.strategies import sync_bundled_strategies
from sessions_app.models import Session
from sessions_app.services import FingerprintData, create_session
from tests.e2e import brain as brain_processes
from vancetope import ratelimit
from vancetope.config.cascade import forget_cached as forget_cached_settings
from vancetope.llm.factory import reset_provider_cache
from vancetope.tenancy.models import (
    ApiToken,
    Project,
    ProjectMembership,
    Role,
    Tenant,
    TenantMembership,
)

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float = 10.0, interval: float = 0.01) -> T:
    """Poll `check` until it returns something truthy; fail with the last value otherwise."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value:
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s (last value: {value!r})")
        time.sleep(interval)
        value = check()
    return value


def closed_process(process_id: int, timeout: float = 20.0) -> Any:
    """The process once it is CLOSED: a worker's goal runs in the turn its start queued, so
    the goal's work is done (and reported) when this returns."""
    from processes.models import ThinkProcess

    return wait_until(
        lambda: ThinkProcess.objects.filter(pk=process_id, status="CLOSED").first(),
        timeout=timeout,
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
    # Revisions and session ids start again with every test's database: a worker's cached
    # settings of an earlier test must not answer for this one's.
    forget_cached_settings()
    # Every test starts with no rate-limit counts (user ids are reused across tests).
    ratelimit.reset()
    yield
    # Let running lanes finish and close their connections before the database is flushed.
    shutdown_worker(wait=True)
    reset_provider_cache()


class Tenancy:
    """A tenant, its project, a member user and an API token for that user."""

    def __init__(self, slug: str) -> None:
        users = get_user_model()
        self.tenant = Tenant.objects.create(slug=slug, name=f"Tenant {slug}")
        self.project = Project.objects.create(tenant=self.tenant, slug=slug, name=f"Project {slug}")
        self.user = users.objects.create_user(f"user-{slug}", password="pw-" + slug)
        TenantMembership.objects.create(user=self.user, tenant=self.tenant, role=Role.ADMIN)
        ProjectMembership.objects.create(user=self.user, project=self.project)
        _, self.token = ApiToken.issue(self.user, name="test")

    @property
    def project_id(self) -> str:
        return self.project.public_id

    def api(self) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.token}")
        return client


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


def open_session(tenancy: Tenancy, client_type: str = "cli", *, system: bool = False) -> Session:
    return create_session(
        tenancy.user,
        client_type=client_type,
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        system=system,
    )


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
