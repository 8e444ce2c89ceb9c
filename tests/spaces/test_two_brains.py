"""Two Brain processes on PostgreSQL mutate one space at once: every accepted mutation is in
the final state, every refused one changed nothing, and the revisions are gapless."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest

from tests.e2e.brain import (
    Brain,
    BrainSocket,
    CeleryWorker,
    bootstrap,
    distributed_env,
    free_port,
    needs_services,
)
from tests.support.spaces import start_space

# Two Brains, a Celery worker and a shell each start Django; .ci/run runs this beside the SQLite
# run on two cores, where the whole took over two minutes (alone: under one).
TIMEOUT_SECONDS = 300
FINGERPRINT = {"machineId": "space-machine", "workingDir": "/srv/space"}
RENAMES, SPLITS = 25, 6


def mutate(client: BrainSocket, tag: str, nodes: list[str], seen: int, log: list[Any]) -> None:
    """Renames at the revision this client saw last (some lose to the other Brain) and
    splits that name no revision (re-checked, never lost); every reply kept."""
    for n in range(RENAMES + SPLITS):
        node = nodes[n % len(nodes)]
        if n % 5 == 4 and n // 5 < SPLITS:
            title = f"split-{tag}-{n}"
            reply = client.request("space-split", {"nodeId": node, "title": title})
            kind = "split"
        else:
            title = f"rename-{tag}-{n}"
            data = {"nodeId": node, "title": title, "revision": seen}
            reply = client.request("space-rename", data)
            kind = "rename"
        if reply["type"] == "space":
            seen = reply["data"]["space"]["revision"]
        log.append((kind, node, title, reply))


@needs_services
@pytest.mark.timeout(TIMEOUT_SECONDS)
def test_two_brains_mutating_one_space_keep_every_accepted_change_and_no_refused_one(
    tmp_path,
    scratch_database,  # noqa: F811
):
    # given two distributed Brains on one database and a space of four root children
    env, queue = distributed_env(
        tmp_path, scratch_database, "spaces", VANCETOPE_SPACE_MAX_CHILDREN="40"
    )
    token = bootstrap(env)
    worker = CeleryWorker(env, queue)
    brains = [Brain(env, free_port()), Brain(env, free_port())]
    try:
        first, second = (brain.socket(token) for brain in brains)
        created = first.request(
            "session-create",
            {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT,
             "recipe": "arthur"},
        )  # fmt: skip
        nodes = start_space(env, created["data"]["chatProcessId"], 4)
        start = first.request("space-get", {"nodeId": nodes[0]})["data"]["space"]
        # when each Brain's client mutates the space at the same time
        logs: list[list[Any]] = [[], []]
        threads = [
            threading.Thread(target=mutate, args=(client, tag, nodes, start["revision"], log))
            for client, tag, log in ((first, "a", logs[0]), (second, "b", logs[1]))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        final = first.request("space-get", {"spaceId": start["id"]})["data"]["space"]
        first.close()
        second.close()
    finally:
        for brain in brains:
            brain.stop()
        worker.stop()
    entries = logs[0] + logs[1]
    accepted = [e for e in entries if e[3]["type"] == "space"]
    refused = [e for e in entries if e[3]["type"] == "error"]
    print(f"accepted {len(accepted)}, refused {len(refused)}, final revision {final['revision']}")
    # then every refusal is a stale revision, and both Brains had some of each
    assert {(e[3]["data"]["code"], e[3]["data"]["error"]) for e in refused} <= {(409, "stale")}
    assert refused, "the clients never raced"
    assert len(accepted) + len(refused) == 2 * (RENAMES + SPLITS)
    # and the revisions are gapless: one per accepted mutation, each once
    assert final["revision"] == start["revision"] + len(accepted)
    revisions = sorted(e[3]["data"]["space"]["revision"] for e in accepted)
    assert revisions == list(range(start["revision"] + 1, final["revision"] + 1))
    with psycopg.connect(scratch_database) as conn:
        stored = [row[0] for row in conn.execute("SELECT revision FROM spaces_spacechange")]
    assert sorted(stored) == list(range(1, final["revision"] + 1))
    # and every accepted split is a node, every accepted rename's last one is the title
    titles = {node["title"] for node in final["nodes"]}
    by_id = {node["id"]: node for node in final["nodes"]}
    for kind, _node, title, _reply in accepted:
        if kind == "split":
            assert title in titles
    last: dict[str, tuple[int, str]] = {}
    for kind, node, title, reply in accepted:
        if kind == "rename":
            revision = reply["data"]["space"]["revision"]
            last[node] = max(last.get(node, (0, "")), (revision, title))
    for node, (_, title) in last.items():
        assert by_id[node]["title"] == title
    # and no refused mutation left anything behind
    for _kind, _node, title, _reply in refused:
        assert title not in titles
    assert len(final["nodes"]) == 1 + 4 + sum(1 for e in accepted if e[0] == "split")
