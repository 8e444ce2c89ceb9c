"""ford — two heads, no brain: user message → LLM → reply. No tools, no memory.

The smoke-test engine and the chat engine until arthur exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import override

from engines.base import Contract, ThinkEngine
from engines.capabilities import LlmMessage
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
    default_settings = {"systemPrompt": "You are Ford, a concise and helpful assistant."}
    # A worker answers its goal at start and stays open for the next message.
    contract = Contract(goal="say something")

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        # A worker spawned with a goal answers it at once; the session's chat process waits
        # for the first chat message instead.
        if process.goal and not ctx.is_chat_process:
            self._answer(ctx, process.goal)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        self._answer(ctx, message.prompt_text())

    def _answer(self, ctx: ThinkEngineContext, text: str) -> None:
        ctx.conversation.append(LlmMessage(role="user", content=text))
        ctx.events.chat_message("user", text, at_once=True)
        completion = ctx.llm.complete(ctx.prompt(), step="answer")
        ctx.conversation.append(LlmMessage(role="assistant", content=completion.text))
        ctx.events.chat_message("assistant", completion.text)
