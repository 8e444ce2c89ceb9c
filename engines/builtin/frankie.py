"""frankie — the generic executor: LLM ↔ tools until the goal is reached or a budget runs out.

A process answers its goal and closes DONE, reporting the result to its parent
(`finishAfterGoal: true`, its default); with `finishAfterGoal: false` (what a session's chat
process gets beneath its recipe's params) it runs the same loop on every message and stays
open. Tools come from
the effective pool (ctx.tools); the recipe decides which (frankie-coding: the client's shell,
filesystem and git tools).

A worker given an `outputSchema` param (a JSON Schema of an object: a vogon phase's `output`)
returns its structured output through `report_result`, whose parameters are that schema; the
call's arguments are the output (in its report's payload as `output`). The tool is offered
beside the others in every `act` step: a model that calls it there with valid arguments has
reported, and the goal ends with that one LLM call (invalid arguments are answered with the
error, as a tool's result, and the loop goes on). A goal that ends without it takes one more
LLM step, `report`, where the LLM must call it: an answer without a valid call is sent back
once with the error; a second one fails the worker with it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from engines.base import Contract, Summary, ThinkEngine
from engines.capabilities import LlmMessage, StructuredOutputError, ToolCall, ToolSchema
from engines.context import Finish
from engines.registry import register_engine

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage

REPORT_TOOL = "report_result"
# The report step's last user message; it ends with the goal, so a script's `match` can tell
# one worker's report from another's.
REPORT_DESCRIPTION = (
    "Give the goal's result as this function's arguments: every field its schema requires, "
    "filled from the result you found."
)
REPORT_ASK = "[control: report] Call report_result with the result of this goal:\n{goal}"


def report_tool(schema: dict[str, Any]) -> ToolSchema:
    return ToolSchema(
        name=REPORT_TOOL,
        description=(
            "Report the result of the goal as structured output, once the goal is reached."
        ),
        parameters=schema,
    )


@register_engine
class Frankie(ThinkEngine):
    name = "frankie"
    title = "Frankie"
    description = (
        "Generic executor: calls the LLM and its tools in a loop until the goal is reached or "
        "the step budget runs out, then reports the result to its parent."
    )
    version = "1.0.0"
    default_settings = {
        "systemPrompt": (
            "You are Frankie, an executor. Reach the goal by calling the tools you have; when "
            "it is reached, answer with the result and call no more tools."
        ),
        # LLM calls per goal (or per chat message); each may ask for several tools.
        "maxSteps": 8,
        # Prompt + completion tokens per goal (or per chat message).
        "maxTokens": 100_000,
        # Close DONE once the goal is reached (false: stay open for the next message).
        "finishAfterGoal": True,
    }
    setting_descriptions = {
        "systemPrompt": "The system prompt when the recipe gives no prompt prefix.",
        "maxSteps": "LLM calls per goal (or per chat message).",
        "maxTokens": "Prompt + completion tokens per goal (or per chat message).",
    }
    # A worker closes DONE once its goal is reached; the session's chat process stays open.
    contract = Contract(chat_process=True)

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        if not process.goal:
            return
        # The goal runs in the process's first turn, in its lane: whoever started it (often a
        # client's socket, or a parent's turn) is not held meanwhile, and the turn can be
        # paused, and waits out a provider failure BLOCKED (telling its parent), as every
        # turn does.
        ctx.defer_turn(process.goal)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        self._run(process, ctx, message.prompt_text())

    def _run(self, process: ProcessView, ctx: ThinkEngineContext, text: str) -> None:
        ctx.conversation.append(LlmMessage(role="user", content=text))
        ctx.events.chat_message("user", text, at_once=True)
        tools = ctx.tools.schemas()
        finishes = ctx.settings.get("finishAfterGoal") is True
        schema = ctx.settings.get("outputSchema") if finishes else None
        report = report_tool(schema) if isinstance(schema, dict) else None
        offered = [*tools, report] if report is not None else tools
        max_steps = int(ctx.settings.get("maxSteps", 8))
        max_tokens = int(ctx.settings.get("maxTokens", 100_000))
        outcome, answer = "done", ""
        output: dict[str, Any] | None = None
        for step in range(max_steps):
            if step and ctx.usage.prompt_tokens + ctx.usage.completion_tokens >= max_tokens:
                outcome, answer = "budget-exhausted", f"Token budget of {max_tokens} exhausted."
                break
            completion = ctx.llm.complete(ctx.prompt(), offered or None, step="act")
            ctx.conversation.append_completion(completion)
            if not completion.tool_calls:
                answer = completion.text
                break
            for call in completion.tool_calls:
                if report is not None and call.name == REPORT_TOOL:
                    output = self._reported(ctx, report, call) or output
                else:
                    ctx.tools.answer(call)
            if output is not None:
                answer = completion.text or str(output.get("summary") or "") or json.dumps(output)
                break
        else:
            outcome, answer = "budget-exhausted", f"Step budget of {max_steps} exhausted."
        if outcome != "done":
            ctx.conversation.append(LlmMessage(role="assistant", content=answer))
        ctx.events.chat_message("assistant", answer)
        process.engine_state = {**process.engine_state, "result": answer, "outcome": outcome}
        if not finishes:
            return
        if outcome == "done" and report is not None:
            if output is None:
                try:
                    output = self._report(ctx, report, process.goal)
                except StructuredOutputError as failed:
                    process.engine_state = {**process.engine_state, "outcome": "report-failed"}
                    ctx.finish(Finish.FAILED, error=str(failed))
                    return
            process.engine_state = {**process.engine_state, "output": output}
        ctx.finish(Finish.DONE)

    def _reported(
        self, ctx: ThinkEngineContext, report: ToolSchema, call: ToolCall
    ) -> dict[str, Any] | None:
        """A report_result call in `act`: its output if valid; its answer (in the
        conversation, as a tool's) is that it was taken, or what is wrong with it."""
        error = ctx.llm.invalid(report, call.arguments)
        taken = f"error: {error}" if error else "reported"
        ctx.conversation.append(LlmMessage(role="tool", content=taken, tool_call_id=call.id))
        return None if error else dict(call.arguments)

    def _report(self, ctx: ThinkEngineContext, report: ToolSchema, goal: str) -> dict[str, Any]:
        """The structured output of the goal's result (step `report`, tool report_result)."""
        ask = LlmMessage(role="user", content=REPORT_ASK.format(goal=goal))
        return ctx.llm.structured(ctx.prompt(ask), report, step="report")

    @override
    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        result = str(process.engine_state.get("result", ""))
        outcome = str(process.engine_state.get("outcome", event))
        if not result:
            return super().summarize_for_parent(process, event)
        payload: dict[str, Any] = {
            "processId": process.public_id,
            "event": event,
            "outcome": outcome,
            "result": result,
        }
        text = f"**{process.goal}** ({outcome})\n\n{result}"
        output = process.engine_state.get("output")
        if output is not None:
            payload["output"] = output
            text += f"\n\nOutput: `{json.dumps(output, ensure_ascii=False)}`"
        return Summary(human_summary=text, payload=payload)
