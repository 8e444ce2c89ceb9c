"""The task tree model (engines/tasktree.py) every server-side reader uses: stored and wire JSON
stay as they were, old rows without a version still load, and a tree of another shape reads as
none."""

from __future__ import annotations

from engines.tasktree import TREE_VERSION, TaskTree

STORED_V1 = {
    "rootId": "n1",
    "nodes": [
        {
            "id": "n1",
            "parentId": None,
            "kind": "PLAN",
            "title": "plan",
            "goal": "g",
            "status": "DONE",
        },
        {
            "id": "n2",
            "parentId": "n1",
            "kind": "WORKER",
            "title": "a",
            "goal": "a",
            "status": "RUNNING",
            "processId": "tp_7",
            "startedAt": "2026-12-01T10:00:00Z",
            "futureKey": 1,
        },
    ],
}


def test_a_tree_stored_without_a_version_loads_and_dumps_as_the_current_version():
    tree = TaskTree.of({"taskTree": STORED_V1})
    assert tree is not None
    assert (tree.version, [node.id for node in tree.tasks]) == (TREE_VERSION, ["n2"])
    # the wire and stored shape: the same keys, a version added, unknown keys kept
    assert tree.dump() == {"version": TREE_VERSION, **STORED_V1}


def test_no_tree_or_a_tree_of_another_shape_reads_as_none():
    assert TaskTree.of({}) is None
    assert TaskTree.of(None) is None
    assert TaskTree.of({"taskTree": {"id": "root", "children": []}}) is None
