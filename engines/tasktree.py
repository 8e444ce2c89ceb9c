"""The task tree object (docs/protocol.md): a typed, versioned model that marvin keeps in
`engine_state["taskTree"]` and that the Brain reads (a person's orders about a node, the
process detail, the admin).

Every reader of a stored tree uses this model (`TaskTree.of(engine_state)`): marvin, a person's
orders, runs (triggers/runs/system.py), a process's last task, the admin. The `vance` CLI, which
imports nothing of the server, reads the same wire JSON with its own reader (vance/tasktree.py).

Stored trees are plain JSON. `TaskTree.load` reads every version that was ever stored (a tree
without `version` is version 1: no `dependsOn`, `attempts`, `replanOf` or `outputSchema`, and a
worker's `result` was its report's Markdown) and `dump` writes the current one, in the shape
the protocol documents: optional fields are left out when unset, `parentId` is always there.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

log = logging.getLogger(__name__)

TREE_VERSION = 2

NodeKind = Literal["PLAN", "WORKER", "USER_INPUT", "AGGREGATE"]
NodeStatus = Literal["PENDING", "RUNNING", "DONE", "FAILED", "BLOCKED", "SKIPPED"]
KINDS: tuple[NodeKind, ...] = ("PLAN", "WORKER", "USER_INPUT", "AGGREGATE")
# A node in one of these has finished: it never runs again.
FINISHED: frozenset[str] = frozenset({"DONE", "FAILED", "SKIPPED"})
# A node in one of these may still be cancelled by the person.
OPEN: frozenset[str] = frozenset({"PENDING", "RUNNING", "BLOCKED"})


class TaskNode(BaseModel):
    # Keys a later version adds are kept when an older Brain reads the tree, not dropped.
    model_config = ConfigDict(extra="allow")

    id: str
    parentId: str | None = None
    kind: NodeKind
    title: str
    goal: str = ""
    status: NodeStatus = "PENDING"
    # The worker's recipe (WORKER; default: marvin's workerRecipe).
    recipe: str | None = None
    # Nodes that must be DONE before this one starts (WORKER); without any, a WORKER runs
    # beside the other ready ones.
    dependsOn: list[str] | None = None
    # The JSON Schema (an object) of the worker's structured result (default: marvin's).
    outputSchema: dict[str, Any] | None = None
    # The worker process of the node's current (or last) run.
    processId: str | None = None
    inboxItemId: str | None = None
    # WORKER: the worker's structured result (an object of its outputSchema); PLAN: what it
    # planned; USER_INPUT: the person's answer; AGGREGATE: the report (Markdown).
    result: Any = None
    error: str | None = None
    startedAt: str | None = None
    finishedAt: str | None = None
    # WORKER: how many worker processes ran it (a re-plan may retry a failed node).
    attempts: int | None = None
    # A PLAN node that a failure woke (a re-plan): the failed nodes it answered.
    replanOf: list[str] | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class TaskTree(BaseModel):
    model_config = ConfigDict(extra="allow")

    version: int = TREE_VERSION
    rootId: str
    nodes: list[TaskNode]

    @classmethod
    def load(cls, stored: dict[str, Any]) -> TaskTree:
        """A stored tree of any version, as the current model."""
        tree = cls.model_validate(stored)
        tree.version = TREE_VERSION
        return tree

    @classmethod
    def of(cls, engine_state: Mapping[str, Any] | None) -> TaskTree | None:
        """The tree an engine keeps in its state (`taskTree`, marvin's and vogon's), or None:
        no tree yet, or one that does not fit the model (logged; its readers then see none,
        as an engine without a tree)."""
        stored = (engine_state or {}).get("taskTree")
        if not isinstance(stored, dict):
            return None
        try:
            return cls.load(stored)
        except ValidationError as exc:
            log.warning("a task tree that does not fit engines/tasktree.py: %s", exc)
            return None

    def dump(self) -> dict[str, Any]:
        """The protocol's task tree object."""
        nodes = []
        for node in self.nodes:
            data = node.model_dump(exclude_none=True)
            data["parentId"] = node.parentId
            nodes.append(data)
        return {"version": self.version, "rootId": self.rootId, "nodes": nodes}

    def find(self, node_id: str) -> TaskNode | None:
        return next((node for node in self.nodes if node.id == node_id), None)

    @property
    def tasks(self) -> list[TaskNode]:
        """The nodes below the root: the tasks of the plan."""
        return [node for node in self.nodes if node.id != self.rootId]
