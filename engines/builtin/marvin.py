"""marvin — deep think: a persistent, growing task tree (seed 000 §7a, ARCHITECTURE §5a).

The tree lives in `engine_state["taskTree"]` (PROTOCOL.md's task tree object) and is sent as a
`task-tree` event on every change. Nodes run one at a time, in order:

- PLAN: the LLM step `plan` returns tasks through `plan_tasks`; they become the PLAN node's
  children (bounded by `maxNodes` and `maxDepth`); an AGGREGATE is added if the plan has none.
  The person's steers so far are shown to the next PLAN step.
- The person may cancel a node that has not finished (a CONTROL `cancel-node`, sent by
  processes/actions/task_tree.py): it is SKIPPED with what was planned under it, and a running
  worker is stopped. Pausing marvin pauses its workers too (processes/actions/lifecycle.py).
- WORKER: spawns a worker sub-process (the node's recipe, default `marvin-worker`) and ends the
  turn; the worker's ParentReport finishes the node (its result is the report).
- USER_INPUT: the process goes BLOCKED with the node's question, which reaches the parent
  through `summarize_for_parent`; the next steer (the parent's, with the answer) finishes it.
- AGGREGATE: the LLM step `aggregate` over the results stored so far; its Markdown is the final
  report to the parent.

Every node's state is a row (the process's engine_state), so a restart never runs a finished
node again: a WORKER's child keeps running and reports, an AGGREGATE is run again from the
stored results.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from typing_extensions import override

from engines.base import Contract, Summary, ThinkEngine
from engines.capabilities import LlmMessage, StructuredOutputError, ToolSchema
from engines.context import Finish
from engines.messages import CANCEL_NODE, Control, ParentReport
from engines.registry import register_engine

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage

KINDS = ("PLAN", "WORKER", "USER_INPUT", "AGGREGATE")
ADVANCE = "advance"

PLAN_TASKS = ToolSchema(
    name="plan_tasks",
    description="Break the goal into tasks, run in this order. WORKER: a sub-process does it; "
    "USER_INPUT: ask the person; PLAN: plan that part further later; AGGREGATE: write the "
    "final report from the results.",
    parameters={
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"enum": list(KINDS)},
                        "title": {"type": "string", "minLength": 1},
                        "goal": {"type": "string"},
                        "recipe": {"type": "string"},
                    },
                    "required": ["kind", "title"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["tasks"],
        "additionalProperties": False,
    },
)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class Tree:
    """The task tree in engine_state: a list of nodes, each a dict of PROTOCOL's node object."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        self.nodes: list[dict[str, Any]] = state["taskTree"]["nodes"]

    @classmethod
    def new(cls, goal: str) -> Tree:
        root = {"id": "n1", "parentId": None, "kind": "PLAN", "title": "Plan", "goal": goal}
        root["status"] = "PENDING"
        return cls({"taskTree": {"rootId": "n1", "nodes": [root]}, "nextId": 2, "waiting": {}})

    def node(self, node_id: str) -> dict[str, Any]:
        return next(node for node in self.nodes if node["id"] == node_id)

    def depth(self, node: dict[str, Any]) -> int:
        depth = 0
        while node["parentId"] is not None:
            node, depth = self.node(node["parentId"]), depth + 1
        return depth

    def add(self, parent: dict[str, Any], task: dict[str, Any]) -> dict[str, Any]:
        node_id = f"n{self.state['nextId']}"
        self.state["nextId"] += 1
        node = {
            "id": node_id,
            "parentId": parent["id"],
            "kind": task["kind"],
            "title": task["title"],
            "goal": task.get("goal") or task["title"],
            "status": "PENDING",
        }
        if task.get("recipe"):
            node["recipe"] = task["recipe"]
        # Children run right after their PLAN node, before what followed it.
        position = self.nodes.index(parent) + 1
        while position < len(self.nodes) and self.is_under(self.nodes[position], parent):
            position += 1
        self.nodes.insert(position, node)
        return node

    def is_under(self, node: dict[str, Any], ancestor: dict[str, Any]) -> bool:
        while node["parentId"] is not None:
            node = self.node(node["parentId"])
            if node is ancestor:
                return True
        return False

    def next_pending(self) -> dict[str, Any] | None:
        return next((node for node in self.nodes if node["status"] == "PENDING"), None)

    def running(self) -> dict[str, Any] | None:
        return next((n for n in self.nodes if n["status"] in {"RUNNING", "BLOCKED"}), None)

    def mark(self, node: dict[str, Any], status: str, **fields: Any) -> None:
        node["status"] = status
        if status in {"RUNNING", "BLOCKED"}:
            node.setdefault("startedAt", _now())
        if status in {"DONE", "FAILED", "SKIPPED"}:
            node["finishedAt"] = _now()
        node.update(fields)

    def results(self) -> list[dict[str, Any]]:
        return [
            {"title": n["title"], "kind": n["kind"], "result": n.get("result", "")}
            for n in self.nodes
            if n["status"] == "DONE" and n["kind"] in {"WORKER", "USER_INPUT"}
        ]


def _check_tasks(tasks: Any) -> str:
    """What is wrong with a given task list ("" if nothing), as plan_tasks' schema says."""
    if not isinstance(tasks, list) or not tasks:
        return "must be a non-empty list"
    for index, task in enumerate(tasks):
        if not isinstance(task, dict) or task.get("kind") not in KINDS:
            return f"[{index}].kind must be one of {', '.join(KINDS)}"
        if not isinstance(task.get("title"), str) or not task["title"]:
            return f"[{index}].title must be a non-empty string"
    return ""


def _fill(tree: Tree, plan: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
    """The tasks become the PLAN node's children; the top plan ends with an AGGREGATE."""
    for task in tasks:
        tree.add(plan, task)
    if plan["parentId"] is None and not any(task["kind"] == "AGGREGATE" for task in tasks):
        tree.add(plan, {"kind": "AGGREGATE", "title": "Report"})
    tree.mark(plan, "DONE", result=f"{len(tasks)} tasks")


@register_engine
class Marvin(ThinkEngine):
    name = "marvin"
    title = "Marvin"
    description = (
        "Deep think: plans a task tree, runs its workers as sub-processes one by one, asks "
        "the person through its parent, and aggregates the results into a report."
    )
    version = "1.0.0"
    # Given its tasks (no plan call), it blocks on the question; the answer's turn finishes.
    contract: ClassVar[Contract] = Contract(
        goal="think about the stars",
        params={"tasks": [{"kind": "USER_INPUT", "title": "Which stars?"}]},
        turn_finishes=True,
        start_defers_turn=True,
    )
    default_settings = {
        "systemPrompt": (
            "You are Marvin, who thinks deeply. Plan the goal as tasks with plan_tasks; when "
            "asked to aggregate, write the final report from the results in Markdown."
        ),
        "workerRecipe": "marvin-worker",
        "maxNodes": 20,
        "maxDepth": 3,
    }
    setting_descriptions = {
        "systemPrompt": "The system prompt when the recipe gives no prompt prefix.",
        "workerRecipe": "The recipe of a WORKER node that names none.",
        "maxNodes": "Nodes a task tree may grow to.",
        "maxDepth": "How deep PLAN nodes may nest.",
    }

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        tree = Tree.new(process.goal or "(no goal)")
        given = ctx.settings.get("tasks")
        if given:
            # A workflow's tasks (PROTOCOL.md, "Workflow"): the tree without a plan call.
            problem = _check_tasks(given)
            if problem:
                ctx.finish(Finish.FAILED, error=f"params.tasks: {problem}")
                return
            _fill(tree, tree.nodes[0], list(given))
        process.engine_state = tree.state
        ctx.events.task_tree(tree.state["taskTree"])
        # The plan is an LLM call: it runs in the lane, so whoever started marvin is not held.
        ctx.defer_turn(ADVANCE)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        tree = Tree(process.engine_state)
        if isinstance(message, ParentReport):
            self._report(tree, message)
        elif isinstance(message, Control) and message.text == CANCEL_NODE:
            self._cancel(ctx, tree, str(message.args.get("nodeId", "")))
        elif not (isinstance(message, Control) and message.text == ADVANCE):
            blocked = tree.running()
            if blocked is not None and blocked["status"] == "BLOCKED":
                # The answer to a USER_INPUT question, steered down by the parent.
                tree.mark(blocked, "DONE", result=message.text)
            else:
                # Seen by the next PLAN step.
                tree.state.setdefault("steers", []).append(message.text)
        self._advance(process, ctx, tree)

    def _report(self, tree: Tree, report: ParentReport) -> None:
        node_id = tree.state["waiting"].pop(report.child_id, None)
        if node_id is None:
            return  # a child this tree no longer waits for
        node = tree.node(node_id)
        if report.event == "DONE":
            tree.mark(node, "DONE", result=report.text)
        else:
            tree.mark(node, "FAILED", error=report.error or f"worker {report.event}")

    def _cancel(self, ctx: ThinkEngineContext, tree: Tree, node_id: str) -> None:
        """The person cancelled a node: skipped with what was under it; a running worker is
        stopped (its STOPPED report is no longer waited for). A node that finished since the
        order was given is left as it is."""
        node = next((n for n in tree.nodes if n["id"] == node_id), None)
        if node is None or node["status"] not in {"PENDING", "RUNNING", "BLOCKED"}:
            return
        child = str(node.get("processId", ""))
        if node["status"] == "RUNNING" and child in tree.state["waiting"]:
            del tree.state["waiting"][child]
            ctx.processes.stop(child)
        for under in tree.nodes:
            if under["status"] == "PENDING" and tree.is_under(under, node):
                tree.mark(under, "SKIPPED", error="its parent node was cancelled")
        tree.mark(node, "SKIPPED", error="cancelled by the person")

    def _advance(self, process: ProcessView, ctx: ThinkEngineContext, tree: Tree) -> None:
        """Run nodes until one waits (a worker, a question) or the tree is done."""
        try:
            while tree.running() is None:
                node = tree.next_pending()
                if node is None:
                    self._done(process, ctx, tree)
                    return
                if node["kind"] == "PLAN":
                    self._plan(ctx, tree, node)
                elif node["kind"] == "AGGREGATE":
                    self._aggregate(ctx, tree, node)
                elif node["kind"] == "WORKER":
                    self._spawn(ctx, tree, node)
                else:
                    tree.mark(node, "BLOCKED")
                    ctx.block()
                process.engine_state = tree.state
                ctx.events.task_tree(tree.state["taskTree"])
        except StructuredOutputError as failed:
            node = tree.running() or tree.next_pending()
            if node is not None:
                tree.mark(node, "FAILED", error=str(failed))
            process.engine_state = tree.state
            ctx.events.task_tree(tree.state["taskTree"])
            ctx.finish(Finish.FAILED, error=str(failed))
            return
        process.engine_state = tree.state

    def _plan(self, ctx: ThinkEngineContext, tree: Tree, node: dict[str, Any]) -> None:
        tree.mark(node, "RUNNING")
        steers = "".join(f"\n- {text}" for text in tree.state.get("steers", []))
        ask = f"Plan: {node['goal']}" + (f"\nThe person said:{steers}" if steers else "")
        planned = ctx.llm.structured(
            ctx.prompt(LlmMessage(role="user", content=ask)), PLAN_TASKS, step="plan"
        )
        max_nodes = int(ctx.settings.get("maxNodes", 20))
        max_depth = int(ctx.settings.get("maxDepth", 3))
        tasks = list(planned["tasks"])
        room = max_nodes - len(tree.nodes)
        if len(tasks) > room:
            raise StructuredOutputError("plan", f"{len(tasks)} tasks, room for {room} (maxNodes)")
        if tree.depth(node) + 1 > max_depth:
            raise StructuredOutputError("plan", f"the tree would be deeper than {max_depth}")
        _fill(tree, node, tasks)

    def _spawn(self, ctx: ThinkEngineContext, tree: Tree, node: dict[str, Any]) -> None:
        recipe = node.get("recipe") or str(ctx.settings.get("workerRecipe", "marvin-worker"))
        child = ctx.processes.spawn(goal=node["goal"], recipe=recipe)
        tree.state["waiting"][child] = node["id"]
        tree.mark(node, "RUNNING", processId=child)

    def _aggregate(self, ctx: ThinkEngineContext, tree: Tree, node: dict[str, Any]) -> None:
        tree.mark(node, "RUNNING")
        results = "\n\n".join(
            f"## {r['title']} ({r['kind']})\n{r['result']}" for r in tree.results()
        )
        ask = f"Aggregate the results into the final report for: {tree.nodes[0]['goal']}"
        completion = ctx.llm.complete(
            ctx.prompt(LlmMessage(role="user", content=f"{ask}\n\n{results}")), step="aggregate"
        )
        tree.mark(node, "DONE", result=completion.text)
        tree.state["report"] = completion.text

    def _done(self, process: ProcessView, ctx: ThinkEngineContext, tree: Tree) -> None:
        failed = [n["id"] for n in tree.nodes if n["status"] == "FAILED"]
        aggregated = tree.state.get("report")
        process.engine_state = tree.state
        if aggregated is None and failed:
            ctx.finish(Finish.FAILED, error=f"tasks {', '.join(failed)} failed")
            return
        report = aggregated or "\n\n".join(r["result"] for r in tree.results())
        tree.state["report"] = report
        ctx.events.chat_message("assistant", report)
        ctx.finish(Finish.DONE)

    @override
    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        state = process.engine_state
        nodes = state.get("taskTree", {}).get("nodes", [])
        payload = {
            "processId": process.public_id,
            "event": event,
            "nodes": {n["id"]: n["status"] for n in nodes},
        }
        if event == "BLOCKED":
            question = next((n for n in nodes if n["status"] == "BLOCKED"), None)
            if question is not None:
                payload["question"] = question["goal"]
                payload["nodeId"] = question["id"]
                return Summary(f"**Question**: {question['goal']}", payload)
        if event == "DONE" and state.get("report"):
            payload["report"] = state["report"]
            return Summary(str(state["report"]), payload)
        return super().summarize_for_parent(process, event)
