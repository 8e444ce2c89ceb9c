"""On PostgreSQL + Redis: the Celery worker that runs a turn killed with SIGKILL at each point of
a tool call (a stdio MCP server's `bump`, the test client's `bump_client`), while the Brain and
its clients' sockets live on. A fresh worker retries the turn from its journal: the tool has run
exactly once (or its person is asked), and the model was asked nothing the journal answered
(tests/support/journal_crash.py; the embedded side is tests/e2e/test_journal_crash.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.brain import needs_services, scratch_database
from tests.support import journal_crash as scenarios
from tests.support.journal_crash import POINTS, Runtime, runtime

pytestmark = [needs_services, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    with scratch_database("journal") as url, runtime(tmp_path_factory.mktemp("journal"), url) as on:
        yield on


@pytest.mark.parametrize(("point", "completions"), POINTS)
def test_an_mcp_tool_runs_once_when_the_worker_is_killed_at_each_point(made, point, completions):
    scenarios.mcp_tool_at(made, point, completions)


@pytest.mark.parametrize(("point", "completions"), POINTS)
def test_a_client_tool_runs_once_when_the_worker_is_killed_at_each_point(made, point, completions):
    scenarios.client_tool_at(made, point, completions)


def test_an_mcp_tool_the_kill_caught_running_asks_its_person_and_runs_again_once(made):
    scenarios.mcp_tool_caught_running(made)


def test_a_client_tool_the_kill_caught_running_asks_and_is_treated_as_done(made):
    scenarios.client_tool_caught_running(made)
