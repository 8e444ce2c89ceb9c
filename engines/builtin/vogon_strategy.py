"""A vogon strategy's run: its state (`engine_params["strategyState"]`), its gates, its
`${…}` placeholders and its synthesis; plain functions and JSON, for engines/builtin/vogon.py.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
APPROVE_WORDS = {"approve", "approved", "yes", "ok"}
REJECT_WORDS = {"reject", "rejected", "no"}
TITLE_MAX = 200
# A phase's status: PENDING, RUNNING (its worker works), APPROVAL (its checkpoint waits), DONE,
# FAILED (worker or gate), REJECTED (at its checkpoint). As task tree node statuses:
NODE_STATUS = {"APPROVAL": "BLOCKED", "REJECTED": "FAILED"}
MISSING = object()


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _shown(value: Any) -> str:
    return "missing" if value is MISSING else json.dumps(value, ensure_ascii=False)


def _lookup(record: dict[str, Any], path: str) -> Any:
    """A gate field's value: `result` is the worker's text, anything else a dotted path into
    its structured output."""
    if path == "result":
        return record.get("result", "")
    value: Any = record.get("output", MISSING)
    for segment in path.split("."):
        value = value.get(segment, MISSING) if isinstance(value, dict) else MISSING
    return value


def _holds(op: str, actual: Any, expected: Any) -> bool:
    if actual is MISSING:
        return False
    if op == "==":
        return bool(actual == expected)
    if op == "!=":
        return bool(actual != expected)
    if op == "contains":
        if isinstance(actual, str):
            return isinstance(expected, str) and expected in actual
        return isinstance(actual, list | dict) and expected in actual
    if isinstance(actual, bool) or not isinstance(actual, int | float):
        return False
    comparisons = {">": actual > expected, ">=": actual >= expected}
    comparisons.update({"<": actual < expected, "<=": actual <= expected})
    return comparisons[op]


def failed_conditions(
    node: dict[str, Any], record: dict[str, Any], at: str
) -> list[dict[str, Any]]:
    """The conditions that make the gate `node` fail (none: it passes). `all` fails with its
    first failing member, `any` with every member when none passes."""
    for group in ("all", "any"):
        if group in node:
            failures = [
                failed_conditions(child, record, f"{at}.{group}[{index}]")
                for index, child in enumerate(node[group])
            ]
            if group == "all":
                return next((failed for failed in failures if failed), [])
            return [] if any(not failed for failed in failures) else sum(failures, [])
    actual = _lookup(record, node["field"])
    if _holds(node["op"], actual, node["value"]):
        return []
    condition = f"{node['field']} {node['op']} {json.dumps(node['value'], ensure_ascii=False)}"
    return [
        {
            "at": at,
            "condition": condition,
            "field": node["field"],
            "op": node["op"],
            "value": node["value"],
            "actual": None if actual is MISSING else actual,
            "text": f"{condition} (actual: {_shown(actual)})",
        }
    ]


def decision_of(text: str) -> tuple[str, str] | None:
    """An approval answered in words (`approve: fine`, `reject too long`): the decision and
    the comment, or None when the text is neither."""
    found = re.match(r"\s*([A-Za-z]+)\W*(.*)", text, re.S)
    word = found.group(1).lower() if found else ""
    if word in APPROVE_WORDS | REJECT_WORDS:
        assert found is not None
        return ("approve" if word in APPROVE_WORDS else "reject"), found.group(2).strip()
    return None


class Run:
    """One strategy's run: the strategy and its state (`strategyState`), as plain JSON."""

    def __init__(self, process: ProcessView, state: dict[str, Any] | None = None) -> None:
        self.process = process
        self.strategy: dict[str, Any] = process.engine_params["strategy"]
        self.state: dict[str, Any] = state or process.engine_params["strategyState"]

    @classmethod
    def new(cls, process: ProcessView) -> Run:
        strategy = process.engine_params["strategy"]
        phases = [{"name": phase["name"], "status": "PENDING"} for phase in strategy["phases"]]
        state = {
            "strategy": strategy.get("name", "inline"),
            "status": "RUNNING",
            "current": 0,
            "phases": phases,
            # child id → index of the phase whose worker it is
            "waiting": {},
            "steers": [],
            # a worker's question passed up: {processId, question, phase, itemId?}
            "asking": None,
            "error": "",
        }
        return cls(process, state)

    @property
    def current(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The current phase (from the strategy) and its record (from the state)."""
        index = int(self.state["current"])
        if index >= len(self.strategy["phases"]):
            return None
        return self.strategy["phases"][index], self.state["phases"][index]

    def approval(self) -> dict[str, Any] | None:
        """The current phase's approval while its checkpoint waits for the answer."""
        current = self.current
        if current is None or current[1]["status"] != "APPROVAL":
            return None
        approval: dict[str, Any] = current[1]["approval"]
        return approval

    def mark(self, record: dict[str, Any], status: str, **fields: Any) -> None:
        record["status"] = status
        if status == "RUNNING":
            record.setdefault("startedAt", _now())
        if status in {"DONE", "FAILED", "REJECTED"}:
            record["finishedAt"] = _now()
        record.update(fields)

    def render(self, text: str) -> str:
        """`${goal}`, `${<phase>.result}`, `${<phase>.output[.<field>]}` filled in."""
        records = {record["name"]: record for record in self.state["phases"]}

        def value(found: re.Match[str]) -> str:
            reference = found.group(1)
            if reference == "goal":
                return self.process.goal
            name, _, path = reference.partition(".")
            part, _, field = path.partition(".")
            record = records.get(name, {})
            got = record.get(part, "") if not field else _lookup(record, field)
            return got if isinstance(got, str) else "" if got is MISSING else json.dumps(got)

        return PLACEHOLDER.sub(value, text)

    def save(self, ctx: ThinkEngineContext) -> None:
        self.process.engine_params = {**self.process.engine_params, "strategyState": self.state}
        tree = self.task_tree()
        self.process.engine_state = {**self.process.engine_state, "taskTree": tree}
        ctx.events.task_tree(tree)

    def task_tree(self) -> dict[str, Any]:
        """The phases as a task tree (PROTOCOL's shape), for the clients that show one."""
        root = {"id": "strategy", "parentId": None, "kind": "PLAN", "status": self.state["status"]}
        root |= {"title": f"Strategy {self.state['strategy']}", "goal": self.process.goal}
        nodes = [root]
        for index, record in enumerate(self.state["phases"]):
            phase = self.strategy["phases"][index]
            node: dict[str, Any] = {
                "id": f"phase-{index + 1}",
                "parentId": "strategy",
                "kind": "WORKER",
            }
            node |= {"title": phase.get("title") or phase["name"], "goal": phase["goal"]}
            if index:
                # The phases run one after another: each waits for the one before (a client
                # draws siblings that depend on none of each other as running at once).
                node["dependsOn"] = [f"phase-{index}"]
            node["status"] = NODE_STATUS.get(record["status"], record["status"])
            for key in ("processId", "result", "error", "startedAt", "finishedAt"):
                if record.get(key):
                    node[key] = record[key]
            nodes.append(node)
        return {"rootId": "strategy", "nodes": nodes}

    def synthesis(self) -> str:
        """Markdown: how each phase went, then the last result."""
        lines = [f"**Strategy {self.state['strategy']}** for: {self.process.goal}"]
        if self.state["error"]:
            lines.append(f"\nFailed: {self.state['error']}")
        lines += ["", "| phase | status | note |", "| --- | --- | --- |"]
        last = None
        for record in self.state["phases"]:
            notes = []
            if record.get("gate"):
                notes.append("gate passed" if record["gate"]["passed"] else "gate failed")
            approval = record.get("approval") or {}
            if approval.get("decision"):
                comment = f": {approval['comment']}" if approval.get("comment") else ""
                notes.append(f"{approval['decision']}d{comment}")
            lines.append(f"| {record['name']} | {record['status']} | {'; '.join(notes)} |")
            if record.get("result"):
                last = record
        if last is not None:
            lines += ["", f"## {last['name']}", "", str(last["result"])]
        return "\n".join(lines)
