"""`vance create` and `vance start` against a real Brain."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.rest_commands import FINGERPRINT, run_vance
from tests.support.waiting import wait_until

pytestmark = pytest.mark.embedded_brain


@pytest.fixture
def session_id(brain) -> str:  # noqa: F811
    running, token, _ = brain
    client = running.socket(token)
    try:
        created = client.request(
            "session-create",
            {
                "clientType": "cli",
                "projectId": "proj_default",
                "fingerprint": FINGERPRINT,
                "onDisconnect": "KEEP_OPEN",
            },
        )
    finally:
        client.close()
    return str(created["data"]["session"]["id"])


def test_create_without_start_then_start_runs_the_process(brain, config_dir: Path, session_id):  # noqa: F811
    running, token, _ = brain
    # when
    created = run_vance(
        config_dir, "create", "--recipe", "ford", "--session", session_id, "--no-start", "hi"
    )
    # then
    assert created.returncode == 0, created.stderr
    line = created.stdout.strip()
    assert line.startswith("Created tp_")
    assert line.endswith(f"(ford, recipe ford) in {session_id}: INIT")
    process_id = line.split()[1]
    # when
    started = run_vance(config_dir, "start", process_id)
    # then
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() in {f"{process_id}: IDLE", f"{process_id}: RUNNING"}
    wait_until(lambda: running.get(f"/api/processes/{process_id}", token)["status"] != "INIT")


def test_create_with_a_wrong_recipe_lists_the_known_ones(config_dir: Path, session_id):  # noqa: F811
    done = run_vance(config_dir, "create", "--recipe", "fordd", "--session", session_id, "x")
    assert done.returncode == 1
    message = " ".join(done.stderr.split())
    assert "recipe: no recipe 'fordd' in project proj_default; known: " in message
    assert "ford" in message


def test_create_without_a_remembered_session_says_how_to_get_one(config_dir: Path, tmp_path):  # noqa: F811
    done = run_vance(config_dir, "create", "--recipe", "ford", "a goal")
    assert done.returncode == 2
    assert "No session remembered for" in done.stderr
    assert "--session sess_N" in " ".join(done.stderr.split())
