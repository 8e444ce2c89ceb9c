"""A real embedded Brain killed with SIGKILL at each point of a turn that calls a tool with an
effect outside it (a stdio MCP server's `bump`, or the test client's own `bump_client`): after
the restart the turn is retried from its journal, the tool has run exactly once (or its person
is asked), the process ends as it would have without the crash, and the model (a recording
stub) was asked nothing the journal answered (tests/support/journal_crash.py). The
PostgreSQL + Redis side, Celery workers killed at the same points, is
tests/processes/test_journal_worker_kill.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import journal_crash as scenarios
from tests.support.journal_crash import POINTS, Runtime, runtime

pytestmark = [pytest.mark.crash, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    with runtime(tmp_path_factory.mktemp("journal")) as embedded:
        yield embedded


@pytest.mark.parametrize(("point", "completions"), POINTS)
def test_an_mcp_tool_runs_once_when_the_brain_is_killed_at_each_point(made, point, completions):
    scenarios.mcp_tool_at(made, point, completions)


@pytest.mark.parametrize(("point", "completions"), POINTS)
def test_a_client_tool_runs_once_when_the_brain_is_killed_at_each_point(made, point, completions):
    scenarios.client_tool_at(made, point, completions)


def test_an_mcp_tool_the_kill_caught_running_asks_its_person_and_runs_again_once(made):
    scenarios.mcp_tool_caught_running(made)


def test_a_client_tool_the_kill_caught_running_asks_and_is_treated_as_done(made):
    scenarios.client_tool_caught_running(made)
