"""A plan's tasks as marvin takes them into its tree: checked (`check_tasks`), kept sensible
where a small model goes wrong (`sensible`), and added under the node that planned them
(`fill`); and whether the plan step offers the minimal schema (`minimal_plans`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engines.builtin.marvin import prompts
from engines.builtin.marvin.state import MarvinState
from engines.tasktree import KINDS, TaskNode

if TYPE_CHECKING:
    from engines.context import ThinkEngineContext


def check_tasks(tasks: Any, state: MarvinState) -> str:
    """What is wrong with a task list ("" if nothing), beyond what plan_tasks' schema says:
    `dependsOn` names an earlier task of the list by position or a node of the tree by id (so
    the nodes can never wait for each other in a circle); an `outputSchema` is an object's."""
    if not isinstance(tasks, list) or not tasks:
        return "must be a non-empty list"
    for index, task in enumerate(tasks):
        if not isinstance(task, dict) or task.get("kind") not in KINDS:
            return f"[{index}].kind must be one of {', '.join(KINDS)}"
        if not isinstance(task.get("title"), str) or not task["title"]:
            return f"[{index}].title must be a non-empty string"
        for dep in task.get("dependsOn") or []:
            if isinstance(dep, bool) or not isinstance(dep, int | str):
                return f"[{index}].dependsOn must hold task positions or node ids"
            if isinstance(dep, int) and not 0 <= dep < index:
                return f"[{index}].dependsOn: {dep} is not an earlier task of this list"
            if isinstance(dep, str) and state.taskTree.find(dep) is None:
                return f"[{index}].dependsOn: no node {dep} in the tree"
        schema = task.get("outputSchema")
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            return f"[{index}].outputSchema must be a JSON Schema of an object"
    return ""


def fill(state: MarvinState, parent: TaskNode, tasks: list[dict[str, Any]]) -> list[TaskNode]:
    """The tasks become `parent`'s children; the top plan ends with an AGGREGATE. An AGGREGATE
    a plan lists before its other tasks goes after them (a small model often lists it first;
    the report is written from the results, so it comes last), unless a task depends on it by
    position."""
    if not any(isinstance(dep, int) for task in tasks for dep in task.get("dependsOn") or []):
        tasks = [t for t in tasks if t["kind"] != "AGGREGATE"] + [
            t for t in tasks if t["kind"] == "AGGREGATE"
        ]
    added: list[TaskNode] = []
    for task in tasks:
        deps = [
            added[dep].id if isinstance(dep, int) else dep for dep in task.get("dependsOn") or []
        ]
        added.append(
            state.add(
                parent,
                kind=task["kind"],
                title=task["title"],
                goal=task.get("goal") or task["title"],
                recipe=task.get("recipe") or None,
                dependsOn=deps or None,
                outputSchema=task.get("outputSchema"),
            )
        )
    if parent.parentId is None and not any(task["kind"] == "AGGREGATE" for task in tasks):
        state.add(parent, kind="AGGREGATE", title="Report", goal="Report")
    return added


def minimal_plans(ctx: ThinkEngineContext) -> bool:
    """Whether a plan offers tasks of kind, title and goal only (`planSchema`)."""
    wanted = ctx.settings.get("planSchema", "auto")
    return wanted == "minimal" or (wanted == "auto" and bool(ctx.llm.small_model))


def sensible(tasks: list[dict[str, Any]], *, nested: bool, goal: str) -> list[dict[str, Any]]:
    """A model's plan, kept from the two ways a small one goes wrong: a PLAN it asks for
    inside a planned part is a WORKER (PLAN nodes nest one level: a 135M model nested them
    until the tree was too deep), and a plan that has nothing to do the work (no WORKER, no
    PLAN, no USER_INPUT: an AGGREGATE alone) becomes one WORKER for the whole goal (and, at
    the top, the AGGREGATE)."""
    if nested:
        tasks = [{**task, "kind": "WORKER"} if task["kind"] == "PLAN" else task for task in tasks]
    if not any(task["kind"] in {"WORKER", "PLAN", "USER_INPUT"} for task in tasks):
        title = goal if len(goal) <= prompts.TITLE_CHARS else goal[: prompts.TITLE_CHARS - 1] + "…"
        tasks = [{"kind": "WORKER", "title": title, "goal": goal}]
        if not nested:
            tasks.append({"kind": "AGGREGATE", "title": "Report"})
    return tasks
