"""After a restart of the Brain (its own OS process), any node's session shows the same space,
at the same revision: the space is rows, not state of a process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port
from tests.support.spaces import start_space

FINGERPRINT = {"machineId": "e2e-space", "workingDir": "/srv/space"}


@pytest.mark.crash
def test_every_nodes_session_shows_the_same_space_after_a_restart(tmp_path: Path):
    env = brain_env(tmp_path)
    token = bootstrap(env)
    port = free_port()
    brain = Brain(env, port)
    try:
        # given a space of two root children, one renamed over the socket
        client = brain.socket(token)
        created = client.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT,
             "recipe": "arthur"},
        )  # fmt: skip
        children = start_space(env, created["data"]["chatProcessId"], 2)
        renamed = client.request("space-rename", {"nodeId": children[1], "title": "Renamed"})
        before = renamed["data"]["space"]
        client.close()
    finally:
        assert brain.stop() == 0, brain.log()
    # when the Brain starts again
    brain = Brain(env, port)
    try:
        # then the session of each node, resumed, shows the same space
        for node in before["nodes"]:
            client = brain.socket(token)
            resumed = client.request(
                "session-resume", {"sessionId": node["sessionId"], "fingerprint": FINGERPRINT}
            )
            assert resumed["type"] == "session-resumed", resumed
            shown = client.request("space-get", {})
            assert shown["data"]["space"] == before
            client.close()
    finally:
        assert brain.stop() == 0, brain.log()
