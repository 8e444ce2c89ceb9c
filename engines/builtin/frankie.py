"""frankie — the generic executor: LLM ↔ tools until the goal is reached or a budget runs out.

A worker process answers its goal and closes DONE, reporting the result to its parent; as a
session's chat process it runs the same loop on every message and stays open. Tools come from
the effective pool (ctx.tools); the recipe decides which (frankie-coding: the client's shell,
filesystem and git tools).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typing_extensions import override

from engines.base import Contract, Summary, ThinkEngine
from engines.capabilities import LlmMessage
from engines.context import Finish
from engines.registry import register_engine

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage


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
    }
    # A worker closes DONE once its goal is reached; the session's chat process stays open.
    contract = Contract(chat_process=True)

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        if not process.goal or ctx.is_chat_process:
            return
        # A goal whose tools wait on the session's client runs in the lane, so whoever
        # started the process (often that very client's socket) is not blocked meanwhile.
        if ctx.tools.needs_client():
            ctx.defer_turn(process.goal)
            return
        self._run(process, ctx, process.goal)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        self._run(process, ctx, message.prompt_text())

    def _run(self, process: ProcessView, ctx: ThinkEngineContext, text: str) -> None:
        ctx.conversation.append(LlmMessage(role="user", content=text))
        ctx.events.chat_message("user", text, at_once=True)
        tools = ctx.tools.schemas()
        max_steps = int(ctx.settings.get("maxSteps", 8))
        max_tokens = int(ctx.settings.get("maxTokens", 100_000))
        outcome, answer = "done", ""
        for step in range(max_steps):
            if step and ctx.usage.prompt_tokens + ctx.usage.completion_tokens >= max_tokens:
                outcome, answer = "budget-exhausted", f"Token budget of {max_tokens} exhausted."
                break
            completion = ctx.llm.complete(ctx.prompt(), tools or None, step="act")
            ctx.conversation.append_completion(completion)
            if not completion.tool_calls:
                answer = completion.text
                break
            for call in completion.tool_calls:
                ctx.tools.answer(call)
        else:
            outcome, answer = "budget-exhausted", f"Step budget of {max_steps} exhausted."
        if outcome != "done":
            ctx.conversation.append(LlmMessage(role="assistant", content=answer))
        ctx.events.chat_message("assistant", answer)
        process.engine_state = {**process.engine_state, "result": answer, "outcome": outcome}
        if not ctx.is_chat_process:
            ctx.finish(Finish.DONE)

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
        return Summary(human_summary=f"**{process.goal}** ({outcome})\n\n{result}", payload=payload)
