"""marvin's engine_state: the task tree (engines/tasktree.py) and what marvin keeps beside it.

`MarvinState.load` reads what a turn finds in `engine_state` (any stored version) and `dump`
writes it back; a turn works on the typed nodes in between.

Which nodes may run (`ready`): PLAN, USER_INPUT and AGGREGATE nodes are steps of marvin's own
and wait for every node before them to finish (and the nodes after them wait for them); a WORKER
waits only for the steps before it and for the nodes its `dependsOn` names, so the WORKER nodes
between two steps run beside each other (up to `maxParallel`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engines.tasktree import FINISHED, TaskNode, TaskTree

STEPS = frozenset({"PLAN", "USER_INPUT", "AGGREGATE"})


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class MarvinState(BaseModel):
    model_config = ConfigDict(extra="allow")

    taskTree: TaskTree
    nextId: int = 2
    # Worker process id -> the node it runs: the reports marvin waits for.
    waiting: dict[str, str] = Field(default_factory=dict)
    # The person's steers so far, shown to every PLAN and re-plan step.
    steers: list[str] = Field(default_factory=list)
    report: str | None = None
    # Re-plan steps run so far (bounded by maxReplans).
    replans: int = 0
    # FAILED nodes a re-plan has answered, or that are reported missing (allowPartial).
    handled: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)

    @classmethod
    def new(cls, goal: str) -> MarvinState:
        root = TaskNode(id="n1", kind="PLAN", title="Plan", goal=goal)
        return cls(taskTree=TaskTree(rootId="n1", nodes=[root]))

    @classmethod
    def load(cls, stored: dict[str, Any]) -> MarvinState:
        return cls.model_validate(stored)

    def dump(self) -> dict[str, Any]:
        data = self.model_dump(exclude={"taskTree", "report"})
        data["taskTree"] = self.taskTree.dump()
        if self.report is not None:
            data["report"] = self.report
        return data

    @property
    def nodes(self) -> list[TaskNode]:
        return self.taskTree.nodes

    @property
    def root(self) -> TaskNode:
        return self.nodes[0]

    def node(self, node_id: str) -> TaskNode:
        found = self.taskTree.find(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def depth(self, node: TaskNode) -> int:
        depth = 0
        while node.parentId is not None:
            node, depth = self.node(node.parentId), depth + 1
        return depth

    def is_under(self, node: TaskNode, ancestor: TaskNode) -> bool:
        while node.parentId is not None:
            node = self.node(node.parentId)
            if node is ancestor:
                return True
        return False

    def add(self, parent: TaskNode, **fields: Any) -> TaskNode:
        """A new PENDING node under `parent`, placed after `parent` and what is under it
        (so it runs before what followed its parent)."""
        node = TaskNode(id=f"n{self.nextId}", parentId=parent.id, **fields)
        self.nextId += 1
        position = self.nodes.index(parent) + 1
        while position < len(self.nodes) and self.is_under(self.nodes[position], parent):
            position += 1
        self.nodes.insert(position, node)
        return node

    def insert_after(self, anchor: TaskNode, **fields: Any) -> TaskNode:
        """A new node under the root, placed right after `anchor` and what is under it."""
        node = TaskNode(id=f"n{self.nextId}", parentId=self.root.id, **fields)
        self.nextId += 1
        position = self.nodes.index(anchor) + 1
        while position < len(self.nodes) and self.is_under(self.nodes[position], anchor):
            position += 1
        self.nodes.insert(position, node)
        return node

    def mark(self, node: TaskNode, status: str, **fields: Any) -> None:
        node.status = status  # type: ignore[assignment]
        if status in {"RUNNING", "BLOCKED"} and node.startedAt is None:
            node.startedAt = now()
        if status in FINISHED:
            node.finishedAt = now()
        for name, value in fields.items():
            setattr(node, name, value)

    def running_workers(self) -> list[TaskNode]:
        return [n for n in self.nodes if n.kind == "WORKER" and n.status == "RUNNING"]

    def blocked(self) -> TaskNode | None:
        return next((n for n in self.nodes if n.status == "BLOCKED"), None)

    def unhandled_failures(self) -> list[TaskNode]:
        return [n for n in self.nodes if n.status == "FAILED" and n.id not in self.handled]

    def ready(self) -> tuple[TaskNode | None, list[TaskNode], list[TaskNode]]:
        """What may run now: the next step (PLAN, USER_INPUT, AGGREGATE) whose predecessors
        have all finished, the WORKER nodes that may start, and the WORKER nodes that never
        will (a node they depend on failed for good or was skipped)."""
        workers: list[TaskNode] = []
        doomed: list[TaskNode] = []
        statuses = {n.id: n.status for n in self.nodes}
        all_finished = True  # every node before this one
        for node in self.nodes:
            if node.kind in STEPS:
                if node.status == "PENDING" and all_finished:
                    return node, workers, doomed
                if not node.finished:
                    # Nothing after a step runs before it has finished (a question holds all).
                    return None, workers, doomed
                continue
            if node.status == "PENDING":
                needs = [statuses.get(dep, "SKIPPED") for dep in node.dependsOn or []]
                if any(
                    status == "SKIPPED" or (status == "FAILED" and dep in self.handled)
                    for dep, status in zip(node.dependsOn or [], needs, strict=True)
                ):
                    doomed.append(node)
                elif all(status == "DONE" for status in needs):
                    workers.append(node)
            if not node.finished:
                all_finished = False
        return None, workers, doomed

    def pending(self) -> bool:
        return any(not node.finished for node in self.nodes)
