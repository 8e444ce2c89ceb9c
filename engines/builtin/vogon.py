"""vogon — the strategy runner: a strategy's phases, one after another.

The strategy (recipes_app/strategy.schema.json; by name from strategies.yaml or the admin, or
inline) is resolved and checked before the process is created (`prepare_params`) and kept in
`engine_params["strategy"]`, so a later edit never changes a running process. Progress is in
`engine_params["strategyState"]`. Each phase, in order:

1. WORKER: a worker from the phase's recipe (default `vogon-worker`, a frankie) on the phase's
   goal, `${…}` filled in; a phase that declares an `output` schema passes it as the worker's
   `outputSchema`, so the worker ends with a structured `report_result`. Its report finishes
   the step; a worker's question goes up (the inbox with `inbox_post`, else the parent).
2. GATE: AND/OR conditions over that output (`result` is the worker's text). A failing gate
   ends vogon FAILED, naming the condition and the value it saw.
3. CHECKPOINT: an APPROVAL of the phase's result, which vogon posts itself when its pool holds
   `inbox_post` (vogon-cron) and otherwise asks its parent for (a BLOCKED report). A reject
   ends vogon FAILED with the reason; approve goes on to the next phase.

The gate comes before the checkpoint: a person is asked only about a result that passed. vogon
makes no LLM call of its own. A finished phase never runs again: after a restart the state is in
the row, and a phase's running worker keeps running and reports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from typing_extensions import override

from engines.base import Contract, Summary, ThinkEngine
from engines.builtin.vogon_strategy import TITLE_MAX, Run, decision_of, failed_conditions
from engines.context import CapabilityNotAvailable, Finish
from engines.messages import InboxAnswer, ParentReport
from engines.registry import register_engine

if TYPE_CHECKING:
    from engines.capabilities import Definitions, ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage


@register_engine
class Vogon(ThinkEngine):
    name = "vogon"
    title = "Vogon"
    description = (
        "Strategy runner: runs a strategy's phases in order, a worker each, checks each "
        "worker's output against the phase's gate and asks for approval where it says."
    )
    version = "1.0.0"
    # Its one phase's worker is a ford, which answers its goal and stays open without a report:
    # vogon waits for it for ever, and takes steers as notes for later phases.
    contract: ClassVar[Contract] = Contract(
        goal="check the stars",
        params={
            "strategy": {
                "name": "wait-for-ford",
                "phases": [{"name": "ask", "goal": "${goal}", "recipe": "ford"}],
            }
        },
    )
    default_settings = {"strategy": "draft-review-ship", "workerRecipe": "vogon-worker"}
    # `strategy` is resolved once, when a process is created (prepare_params): not a setting.
    setting_descriptions = {"workerRecipe": "The recipe of a phase's worker that names none."}

    @override
    def prepare_params(self, params: dict[str, Any], definitions: Definitions) -> dict[str, Any]:
        ref = params.get("strategy", self.default_settings["strategy"])
        return {**params, "strategy": definitions.strategy(ref, field="params.strategy")}

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        if not isinstance(process.engine_params.get("strategy"), dict):
            # Only a process row made by hand lacks it: create_process resolves it.
            ctx.finish(Finish.FAILED, error="params.strategy: no strategy was resolved")
            return
        run = Run.new(process)
        self._advance(ctx, run)
        run.save(ctx)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        run = Run(process)
        if run.state["status"] != "RUNNING":
            return
        if isinstance(message, ParentReport):
            self._report(ctx, run, message)
        elif isinstance(message, InboxAnswer):
            self._inbox_answer(ctx, run, message)
        else:
            self._words(ctx, run, message.text)
        if run.state["status"] == "RUNNING" and self._waits_for_a_person(run):
            ctx.block()
        run.save(ctx)

    # --- the phases ------------------------------------------------------------------------------

    def _advance(self, ctx: ThinkEngineContext, run: Run) -> None:
        """Start the current phase's worker, or finish when every phase is done."""
        current = run.current
        if current is None:
            self._end(ctx, run, Finish.DONE)
            return
        phase, record = current
        goal = run.render(phase["goal"])
        if run.state["steers"]:
            goal += "\n\nThe person said:" + "".join(f"\n- {s}" for s in run.state["steers"])
        params = dict(phase.get("params") or {})
        if "output" in phase:
            params["outputSchema"] = phase["output"]
        recipe = phase.get("recipe") or str(ctx.settings.get("workerRecipe", "vogon-worker"))
        child = ctx.processes.spawn(goal=goal, recipe=recipe, params=params)
        run.state["waiting"][child] = run.state["current"]
        run.mark(record, "RUNNING", processId=child)

    def _report(self, ctx: ThinkEngineContext, run: Run, report: ParentReport) -> None:
        index = run.state["waiting"].get(report.child_id)
        current = run.current
        if index is None or current is None or index != run.state["current"]:
            return  # a worker of a phase that is over
        phase, record = current
        if report.event == "BLOCKED":
            question = str(report.payload.get("question") or "")
            if question and not report.error:
                self._pass_question_up(ctx, run, report.child_id, question)
            return  # else it waits (for its provider, say) and reports again
        del run.state["waiting"][report.child_id]
        if report.event != "DONE":
            error = f"phase {phase['name']}: worker {report.child_id} {report.event}"
            error += f": {report.error}" if report.error else ""
            run.mark(record, "FAILED", error=error)
            self._end(ctx, run, Finish.FAILED, error)
            return
        record["result"] = str(report.payload.get("result") or report.text)
        if isinstance(report.payload.get("output"), dict):
            record["output"] = report.payload["output"]
        if "gate" in phase:
            at = f"phases[{run.state['current']}].gate"
            failed = failed_conditions(phase["gate"], record, at)
            record["gate"] = {"passed": not failed, "failed": failed}
            if failed:
                error = f"phase {phase['name']}: gate failed at {failed[0]['at']}: "
                error += "; ".join(condition["text"] for condition in failed)
                run.mark(record, "FAILED", error=error)
                self._end(ctx, run, Finish.FAILED, error)
                return
        if "checkpoint" in phase:
            self._ask_approval(ctx, run, phase, record)
            return
        self._next(ctx, run, record)

    def _next(self, ctx: ThinkEngineContext, run: Run, record: dict[str, Any]) -> None:
        run.mark(record, "DONE")
        run.state["current"] += 1
        self._advance(ctx, run)

    def _ask_approval(
        self, ctx: ThinkEngineContext, run: Run, phase: dict[str, Any], record: dict[str, Any]
    ) -> None:
        checkpoint = phase["checkpoint"]
        title = run.render(checkpoint["title"]).strip()
        if len(title) > TITLE_MAX:
            title = title[: TITLE_MAX - 1] + "…"
        body = run.render(checkpoint["body"]) if "body" in checkpoint else record["result"]
        approval: dict[str, Any] = {"title": title, "body": body}
        try:
            approval["itemId"] = ctx.inbox.post(kind="APPROVAL", title=title, body=body)
        except CapabilityNotAvailable:
            pass  # asked through the parent: summarize_for_parent says what
        run.mark(record, "APPROVAL", approval=approval)

    def _decide(self, ctx: ThinkEngineContext, run: Run, decision: str, comment: str) -> None:
        current = run.current
        assert current is not None
        phase, record = current
        record["approval"].pop("unclear", None)
        record["approval"] |= {"decision": decision, "comment": comment}
        if decision == "approve":
            self._next(ctx, run, record)
            return
        error = f"phase {phase['name']}: rejected: {comment or 'no reason given'}"
        run.mark(record, "REJECTED", error=error)
        self._end(ctx, run, Finish.FAILED, error)

    def _end(self, ctx: ThinkEngineContext, run: Run, how: Finish, error: str = "") -> None:
        run.state["status"] = str(how)
        run.state["error"] = error
        synthesis = run.synthesis()
        ctx.events.chat_message("assistant", synthesis)
        try:
            # A top-level vogon (vogon-cron) leaves its synthesis where a person reads it.
            title = f"Strategy {run.state['strategy']}: {run.process.goal}"[:TITLE_MAX]
            ctx.inbox.post(kind="OUTPUT_TEXT", title=title, body=synthesis)
        except CapabilityNotAvailable:
            pass  # its parent reads it in the report
        ctx.finish(how, error=error)

    # --- people ----------------------------------------------------------------------------------

    @staticmethod
    def _waits_for_a_person(run: Run) -> bool:
        return run.state["asking"] is not None or run.approval() is not None

    def _pass_question_up(
        self, ctx: ThinkEngineContext, run: Run, child: str, question: str
    ) -> None:
        asking: dict[str, Any] = {"processId": child, "question": question}
        try:
            title = f"{child} asks"
            asking["itemId"] = ctx.inbox.post(
                kind="QUESTION", title=title, body=question, asked_by=child
            )
        except CapabilityNotAvailable:
            pass  # asked through the parent
        run.state["asking"] = asking

    def _inbox_answer(self, ctx: ThinkEngineContext, run: Run, answer: InboxAnswer) -> None:
        asking = run.state["asking"]
        if asking and asking.get("itemId") == answer.item_id:
            self._pass_answer_down(ctx, run, answer.text)
            return
        approval = run.approval()
        if approval is None or approval.get("itemId") != answer.item_id:
            return
        decision = str(answer.answer.get("decision") or "reject")
        # No answer at all: it expired, which does not approve anything.
        comment = str(answer.answer.get("comment") or ("" if answer.answer else answer.text))
        self._decide(ctx, run, decision, comment)

    def _words(self, ctx: ThinkEngineContext, run: Run, text: str) -> None:
        """A steer (or chat): the answer to what vogon asked its parent, else a note for the
        phases still to start."""
        asking = run.state["asking"]
        approval = run.approval()
        if asking and "itemId" not in asking:
            self._pass_answer_down(ctx, run, text)
        elif approval is not None and "itemId" not in approval:
            decided = decision_of(text)
            if decided is not None:
                self._decide(ctx, run, *decided)
            else:
                approval["unclear"] = text  # asked again, saying so
        else:
            run.state["steers"].append(text)

    def _pass_answer_down(self, ctx: ThinkEngineContext, run: Run, text: str) -> None:
        child = run.state["asking"]["processId"]
        run.state["asking"] = None
        ctx.processes.steer(child, text)

    # --- what the parent hears -------------------------------------------------------------------

    @override
    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        state = process.engine_params.get("strategyState")
        if not state:
            return super().summarize_for_parent(process, event)
        run = Run(process, state)
        payload: dict[str, Any] = {
            "processId": process.public_id,
            "event": event,
            "strategy": state["strategy"],
            "phases": state["phases"],
        }
        failed = next((r for r in state["phases"] if r.get("gate", {}).get("failed")), None)
        if failed is not None:
            payload["failedCondition"] = {"phase": failed["name"], **failed["gate"]["failed"][0]}
        if event == "BLOCKED":
            asked = self._asked(run)
            if asked is not None:
                text, fields = asked
                return Summary(text, {**payload, **fields})
        synthesis = run.synthesis()
        if event == "DONE":
            payload["report"] = synthesis
        if state["error"]:
            payload["error"] = state["error"]
        return Summary(synthesis, payload)

    @staticmethod
    def _asked(run: Run) -> tuple[str, dict[str, Any]] | None:
        """What vogon asks its parent, as the summary's text and payload fields (None when it
        waits on an inbox item of its own)."""
        asking = run.state["asking"]
        if asking and "itemId" not in asking:
            question = asking["question"]
            return f"**Question** ({asking['processId']}): {question}", {"question": question}
        approval = run.approval()
        if approval is None or "itemId" in approval:
            return None
        phase = run.strategy["phases"][run.state["current"]]
        question = f"{approval['title']}\n\n{approval['body']}"
        if approval.get("unclear"):
            question += f"\n\n(Not understood: {approval['unclear']!r}; answer approve or reject.)"
        fields = {
            "approval": True,
            "question": question,
            "options": ["approve", "reject"],
            "phase": phase["name"],
        }
        return f"**Approval needed** (phase {phase['name']}): {question}", fields
