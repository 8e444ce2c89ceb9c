"""ford — two heads, no brain: user message → LLM → reply. No tools, no memory.

The smoke-test engine, and the chat of system sessions. A worker answers its goal in its
first turn (a turn of its own, in its lane, not in `start`: a provider that fails leaves it
BLOCKED with the error, which its parent hears, instead of a start that never ends).

Two params make a ford a council head (zaphod's, recipe `zaphod-head`):
- `finishAfterGoal: true`: it answers its goal (step `head`) and finishes DONE; its report to
  the parent carries the answer.
- `persona`: text appended to the system prompt (who this head is).
Without them ford answers every message and stays open, whether it is a session's chat or a
worker: it never asks which it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
class Ford(ThinkEngine):
    name = "ford"
    title = "Ford"
    description = "Minimal chat: user message → LLM → reply. No tools, no memory."
    version = "1.0.0"
    default_settings = {
        "systemPrompt": "You are Ford, a concise and helpful assistant.",
        # Stays open after an answer (a recipe's `finishAfterGoal: true` closes it DONE).
        "finishAfterGoal": False,
    }
    setting_descriptions = {
        "systemPrompt": "The system prompt when the recipe gives no prompt prefix.",
    }
    # A worker answers its goal in its first turn and stays open for the next message.
    contract = Contract(goal="say something", start_defers_turn=True)

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        # A worker spawned with a goal answers it in its first turn, in its lane: whoever
        # started it is not held by the LLM call, and the turn can be paused, and waits out
        # a provider failure BLOCKED (telling its parent) as every turn does. A process
        # without a goal (a session's chat) waits for its first message instead.
        if process.goal:
            ctx.defer_turn(process.goal)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        if not _finishes_after_goal(ctx):
            self._answer(ctx, message.prompt_text())
            return
        process.engine_state = {"answer": self._answer(ctx, message.prompt_text(), step="head")}
        ctx.finish(Finish.DONE)

    def _answer(self, ctx: ThinkEngineContext, text: str, step: str = "answer") -> str:
        ctx.conversation.append(LlmMessage(role="user", content=text))
        ctx.events.chat_message("user", text, at_once=True)
        completion = ctx.llm.complete(_prompt(ctx), step=step)
        ctx.conversation.append(LlmMessage(role="assistant", content=completion.text))
        ctx.events.chat_message("assistant", completion.text)
        return completion.text

    @override
    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        answer = process.engine_state.get("answer")
        if event == "DONE" and isinstance(answer, str):
            payload = {"processId": process.public_id, "event": event, "answer": answer}
            return Summary(answer or "(an empty answer)", payload)
        return super().summarize_for_parent(process, event)


def _finishes_after_goal(ctx: ThinkEngineContext) -> bool:
    return ctx.settings.get("finishAfterGoal") is True


def _prompt(ctx: ThinkEngineContext) -> list[LlmMessage]:
    persona = str(ctx.settings.get("persona") or "")
    if not persona:
        return ctx.prompt()
    system = "\n\n".join(part for part in (ctx.system_prompt(), persona) if part)
    return [LlmMessage(role="system", content=system), *ctx.conversation.history()]
