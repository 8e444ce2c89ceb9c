"""marvin — deep think: a persistent, growing task tree of PLAN, WORKER, USER_INPUT and
AGGREGATE nodes (docs/engines.md, "marvin").

The tree lives in `engine_state["taskTree"]` (the protocol's task tree object, typed by
engines/tasktree.py) and goes out as a `task-tree` event with every turn's commit.

- PLAN: the LLM step `plan` returns tasks through `plan_tasks`; they become the node's
  children (within `maxNodes` and `maxDepth`); the top plan ends with an AGGREGATE. It reads the
  goal, the person's steers and a digest of every node finished so far (prompts.py).
- WORKER: a child process (the node's recipe, default `marvin-worker`) is spawned with the
  node's `outputSchema` (or the default one) and the turn ends; WORKER nodes that do not depend
  on each other run at once, up to `maxParallel`. Each child's report is one pending message
  that wakes marvin: it stores the worker's structured result on the node (`result`) and starts
  what the finished node made ready.
- A worker that fails (or waits, BLOCKED, after its lane's retries) fails its node, and a
  failure wakes a `replan` step (at most `maxReplans`) that may add, retry or skip nodes; past
  the bound marvin closes FAILED naming the nodes, or, with `allowPartial`, reports without them.
- USER_INPUT: marvin goes BLOCKED with the question (its parent reads it in the report); the next
  steer, the parent's answer, finishes the node.
- AGGREGATE: the LLM step `aggregate` over the stored results; its Markdown is the report.

marvin never closes while a child of it is open: it stops them first. Every node's state is a
row (the process's engine_state) and every child is a process with its own lane, so a restart
never runs a finished node again: a running worker reports when it is done, and a step that was
interrupted runs again from the stored tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from typing_extensions import override

from engines.base import Contract, Summary, ThinkEngine
from engines.builtin.marvin import prompts
from engines.builtin.marvin.consult import complete_consulting_tools
from engines.builtin.marvin.plans import check_tasks, fill, minimal_plans, sensible
from engines.builtin.marvin.state import MarvinState
from engines.capabilities import LlmMessage, StructuredOutputError
from engines.context import Finish
from engines.messages import CANCEL_NODE, Control, ParentReport
from engines.registry import register_engine
from engines.tasktree import OPEN, TaskNode

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage

ADVANCE = "advance"


@register_engine
class Marvin(ThinkEngine):
    name = "marvin"
    aliases = ("deep-think",)
    title = "Marvin"
    description = (
        "Deep think: plans a task tree, runs its independent workers at once as sub-processes, "
        "re-plans when one fails, asks the person through its parent, and aggregates the "
        "workers' structured results into a report."
    )
    version = "1.1.0"
    # The reports of workers that finished together are one turn (`_save` replaces the state).
    coalesce_reports = True
    # Given its tasks (no plan call), it blocks on the question; the answer's turn finishes.
    contract: ClassVar[Contract] = Contract(
        goal="think about the stars",
        params={"tasks": [{"kind": "USER_INPUT", "title": "Which stars?"}]},
        turn_finishes=True,
        start_defers_turn=True,
    )
    default_settings = {
        "systemPrompt": (
            "You are Marvin, who thinks deeply. You break a goal into WORKER tasks, each a job "
            "a worker does on its own, and end with one AGGREGATE task that writes the report. "
            "When asked to aggregate, write the final report from the results in Markdown."
        ),
        "workerRecipe": "marvin-worker",
        "maxNodes": 20,
        "planSchema": "auto",
        "maxDepth": 3,
        "maxParallel": 4,
        "maxReplans": 2,
        "allowPartial": False,
        "digestTokens": 1500,
    }
    setting_descriptions = {
        "systemPrompt": "The system prompt when the recipe gives no prompt prefix.",
        "workerRecipe": "The recipe of a WORKER node that names none.",
        "maxNodes": "Nodes a task tree may grow to.",
        "planSchema": "full: a plan's tasks may name a recipe, dependsOn and an outputSchema; "
        "minimal: kind, title and goal only (for small models, which a longer schema confuses); "
        "auto: minimal for a small model (the llm.modelSize setting), else full.",
        "maxDepth": "How deep PLAN nodes may nest.",
        "maxParallel": "WORKER nodes that run at once (1: one after another).",
        "maxReplans": "Re-plan steps a tree may take after failed nodes.",
        "allowPartial": "Past maxReplans, report without the failed nodes instead of failing.",
        "digestTokens": "About how many tokens the digest of finished nodes in a plan may take.",
    }

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        state = MarvinState.new(process.goal or "(no goal)")
        given = ctx.settings.get("tasks")
        if given:
            # A workflow's tasks: the tree without a plan call.
            problem = check_tasks(given, state)
            if problem:
                ctx.finish(Finish.FAILED, error=f"params.tasks: {problem}")
                return
            fill(state, state.root, list(given))
            state.mark(state.root, "DONE", result=f"{len(given)} tasks")
        self._save(process, ctx, state)
        # The plan is an LLM call: it runs in the lane, so whoever started marvin is not held.
        ctx.defer_turn(ADVANCE)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        state = MarvinState.load(process.engine_state)
        if isinstance(message, ParentReport):
            self._report(ctx, state, message)
        elif isinstance(message, Control) and message.text == CANCEL_NODE:
            self._cancel(ctx, state, str(message.args.get("nodeId", "")))
        elif not (isinstance(message, Control) and message.text == ADVANCE):
            question = state.blocked()
            if question is not None and question.kind == "USER_INPUT":
                # The answer to a USER_INPUT question, steered down by the parent.
                state.mark(question, "DONE", result=message.text)
            else:
                # Seen by every later PLAN and re-plan step.
                state.steers.append(message.text)
        try:
            self._advance(ctx, state)
        except StructuredOutputError as failed:
            node = next(
                (n for n in state.nodes if n.status == "RUNNING" and n.kind != "WORKER"), None
            )
            if node is not None:
                state.mark(node, "FAILED", error=str(failed))
            self._close_failed(ctx, state, str(failed))
        self._save(process, ctx, state)

    def _save(self, process: ProcessView, ctx: ThinkEngineContext, state: MarvinState) -> None:
        process.engine_state = state.dump()
        ctx.events.task_tree(process.engine_state["taskTree"])

    def _report(self, ctx: ThinkEngineContext, state: MarvinState, report: ParentReport) -> None:
        node_id = state.waiting.pop(report.child_id, None)
        if node_id is None:
            return  # a child this tree no longer waits for (cancelled, or stopped by marvin)
        node = state.node(node_id)
        if report.event == "DONE":
            output = report.payload.get("output")
            if output is None:
                # A worker of an engine without structured output (a nested marvin): its text.
                output = report.payload.get("report") or report.payload.get("result") or report.text
            state.mark(node, "DONE", result=output)
        elif report.event == "BLOCKED":
            # Its lane gave up on it (the provider failed every retry) or it asks a question
            # no one here answers: the node fails, and nobody waits for the worker any more.
            ctx.processes.stop(report.child_id)
            why = report.error or str(report.payload.get("question") or "")
            state.mark(node, "FAILED", error=f"worker {report.child_id} blocked: {why}".strip())
        else:
            why = report.error or f"worker {report.child_id} {report.event}"
            state.mark(node, "FAILED", error=why)

    def _cancel(self, ctx: ThinkEngineContext, state: MarvinState, node_id: str) -> None:
        """The person cancelled a node: skipped with what was under it; a running worker is
        stopped (its STOPPED report is no longer waited for). A node that finished since the
        order was given is left as it is."""
        node = state.taskTree.find(node_id)
        if node is None or node.status not in OPEN:
            return
        if node.status == "RUNNING" and node.processId in state.waiting:
            del state.waiting[node.processId]
            ctx.processes.stop(node.processId)
        for under in state.nodes:
            if under.status == "PENDING" and state.is_under(under, node):
                state.mark(under, "SKIPPED", error="its parent node was cancelled")
        state.mark(node, "SKIPPED", error="cancelled by the person")

    def _advance(self, ctx: ThinkEngineContext, state: MarvinState) -> None:
        """Start what may run until marvin waits (for workers, for an answer) or the tree is
        done. A failure is answered first (re-plan, partial, or the end)."""
        max_parallel = max(1, int(ctx.settings.get("maxParallel", 4)))
        while True:
            failures = state.unhandled_failures()
            if failures and not self._on_failures(ctx, state, failures):
                return
            step, workers, doomed = state.ready()
            for node in doomed:
                state.mark(node, "SKIPPED", error="a node it depends on did not finish")
            if doomed:
                continue
            room = max_parallel - len(state.running_workers())
            for node in workers[: max(0, room)]:
                self._spawn(ctx, state, node)
            if step is None:
                if state.running_workers() or not state.pending():
                    break
                raise StructuredOutputError("advance", "no node can run and none runs")
            if step.kind == "PLAN":
                self._plan(ctx, state, step)
            elif step.kind == "AGGREGATE":
                self._aggregate(ctx, state, step)
            else:
                state.mark(step, "BLOCKED")
                ctx.block()
                return
        if not state.pending():
            self._done(ctx, state)

    def _on_failures(
        self, ctx: ThinkEngineContext, state: MarvinState, failures: list[TaskNode]
    ) -> bool:
        """A re-plan while the bound allows; then, with allowPartial, the failed nodes are
        reported missing; else marvin closes FAILED naming them. True if the tree goes on."""
        if state.replans < int(ctx.settings.get("maxReplans", 2)):
            self._replan(ctx, state, failures)
            return True
        ids = [node.id for node in failures]
        state.handled.extend(ids)
        if ctx.settings.get("allowPartial"):
            state.missing.extend(ids)
            return True
        named = "; ".join(f"{n.id} ({n.title}): {n.error or 'failed'}" for n in failures)
        self._close_failed(ctx, state, f"tasks failed after {state.replans} re-plans: {named}")
        return False

    def _close_failed(self, ctx: ThinkEngineContext, state: MarvinState, error: str) -> None:
        """marvin ends FAILED: its open workers are stopped first, what never ran is skipped."""
        for node in state.nodes:
            if node.status == "PENDING":
                state.mark(node, "SKIPPED", error="the tree failed")
            elif node.status == "RUNNING" and node.kind == "WORKER":
                state.mark(node, "SKIPPED", error="stopped: the tree failed")
        self._stop_children(ctx, state)
        ctx.finish(Finish.FAILED, error=error)

    def _stop_children(self, ctx: ThinkEngineContext, state: MarvinState) -> None:
        state.waiting.clear()
        for child in ctx.processes.list():
            if child["status"] != "CLOSED":
                ctx.processes.stop(child["id"])

    def _plan(self, ctx: ThinkEngineContext, state: MarvinState, node: TaskNode) -> None:
        state.mark(node, "RUNNING")
        ask = prompts.plan_ask(state, node, int(ctx.settings.get("digestTokens", 1500)))
        room = int(ctx.settings.get("maxNodes", 20)) - len(state.nodes)
        planned = ctx.llm.structured(
            ctx.prompt(LlmMessage(role="user", content=ask)),
            prompts.plan_tasks(room, minimal=minimal_plans(ctx)),
            step="plan",
        )
        tasks = sensible(list(planned["tasks"]), nested=node.parentId is not None, goal=node.goal)
        self._check_room(ctx, state, "plan", tasks, extra=0)
        if state.depth(node) + 1 > int(ctx.settings.get("maxDepth", 3)):
            raise StructuredOutputError(
                "plan", f"the tree would be deeper than {ctx.settings.get('maxDepth', 3)}"
            )
        fill(state, node, tasks)
        state.mark(node, "DONE", result=f"{len(tasks)} tasks")

    def _check_room(
        self, ctx: ThinkEngineContext, state: MarvinState, step: str, tasks: list[Any], extra: int
    ) -> None:
        problem = check_tasks(tasks, state) if tasks else ""
        if problem:
            raise StructuredOutputError(step, f"tasks{problem}")
        room = int(ctx.settings.get("maxNodes", 20)) - len(state.nodes) - extra
        if len(tasks) > room:
            raise StructuredOutputError(step, f"{len(tasks)} tasks, room for {room} (maxNodes)")

    def _replan(self, ctx: ThinkEngineContext, state: MarvinState, failed: list[TaskNode]) -> None:
        """The `replan` step, recorded as a PLAN node after the failed ones (`replanOf`)."""
        ids = [node.id for node in failed]
        state.replans += 1
        state.handled.extend(ids)
        ask = prompts.replan_ask(state, failed, int(ctx.settings.get("digestTokens", 1500)))
        node = state.insert_after(
            failed[-1],
            kind="PLAN",
            title=f"Re-plan {state.replans} after {', '.join(ids)} failed",
            goal=state.root.goal,
            replanOf=ids,
        )
        state.mark(node, "RUNNING")
        answer = ctx.llm.structured(
            ctx.prompt(LlmMessage(role="user", content=ask)), prompts.REPLAN_TASKS, step="replan"
        )
        for node_id in answer.get("retry") or []:
            target = state.taskTree.find(node_id)
            if target is None or target.kind != "WORKER" or target.status != "FAILED":
                raise StructuredOutputError("replan", f"retry: {node_id} is not a failed WORKER")
            # A retried node runs again; if it fails again, that is a new failure.
            state.handled = [handled for handled in state.handled if handled != node_id]
            target.status, target.startedAt, target.finishedAt = "PENDING", None, None
            target.error = None
        for node_id in answer.get("skip") or []:
            target = state.taskTree.find(node_id)
            if target is None or target.status not in {"PENDING", "FAILED"}:
                raise StructuredOutputError("replan", f"skip: {node_id} is not pending or failed")
            why = f"skipped by the re-plan {node.id}"
            state.mark(target, "SKIPPED", error=f"{target.error}; {why}" if target.error else why)
        tasks = list(answer.get("add") or [])
        self._check_room(ctx, state, "replan", tasks, extra=0)
        added = fill(state, node, tasks)
        state.mark(
            node,
            "DONE",
            result={
                "added": [n.id for n in added],
                "retried": list(answer.get("retry") or []),
                "skipped": list(answer.get("skip") or []),
                "reason": str(answer.get("reason") or ""),
            },
        )

    def _spawn(self, ctx: ThinkEngineContext, state: MarvinState, node: TaskNode) -> None:
        recipe = node.recipe or str(ctx.settings.get("workerRecipe", "marvin-worker"))
        goal = node.goal
        if node.dependsOn:
            built_on = "".join(
                f"\n- {dep.id} {dep.title}: {prompts.result_summary(dep.result)}"
                for dep in (state.node(dep_id) for dep_id in node.dependsOn)
            )
            goal += f"\n\nResults it builds on:{built_on}"
        schema = node.outputSchema or prompts.DEFAULT_OUTPUT_SCHEMA
        child = ctx.processes.spawn(goal=goal, recipe=recipe, params={"outputSchema": schema})
        state.waiting[child] = node.id
        state.mark(node, "RUNNING", processId=child, attempts=(node.attempts or 0) + 1)

    def _aggregate(self, ctx: ThinkEngineContext, state: MarvinState, node: TaskNode) -> None:
        state.mark(node, "RUNNING")
        ask = prompts.aggregate_ask(state, ctx.llm.room())
        completion = complete_consulting_tools(ctx, ask, step="aggregate")
        state.mark(node, "DONE", result=completion.text)
        state.report = completion.text

    def _done(self, ctx: ThinkEngineContext, state: MarvinState) -> None:
        report = state.report
        if report is None:
            # No AGGREGATE ran (the person cancelled it): the results as they are.
            report = "\n\n".join(
                prompts.result_summary(n.result)
                for n in state.nodes
                if n.kind in {"WORKER", "USER_INPUT"} and n.status == "DONE"
            )
        missing = prompts.missing_lines(state)
        if missing:
            report += f"\n\n**Missing** (failed, not in this report):\n{missing}"
        state.report = report
        self._stop_children(ctx, state)
        ctx.events.chat_message("assistant", report)
        ctx.finish(Finish.DONE)

    @override
    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        if "taskTree" not in process.engine_state:
            return super().summarize_for_parent(process, event)
        state = MarvinState.load(process.engine_state)
        payload: dict[str, Any] = {
            "processId": process.public_id,
            "event": event,
            "nodes": {n.id: n.status for n in state.nodes},
        }
        if event == "BLOCKED":
            question = state.blocked()
            if question is not None:
                payload["question"] = question.goal
                payload["nodeId"] = question.id
                return Summary(f"**Question**: {question.goal}", payload)
        if event == "DONE" and state.report:
            payload["report"] = state.report
            if state.missing:
                payload["missing"] = list(state.missing)
            return Summary(state.report, payload)
        return super().summarize_for_parent(process, event)
