"""ford — two heads, no brain: user message → LLM → reply. No tools, no memory.

The smoke-test engine and the chat engine until arthur exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import override

from engines.base import ThinkEngine
from engines.registry import register_engine
from vancetope.llm.base import LlmMessage

if TYPE_CHECKING:
    from engines.context import ThinkEngineContext
    from processes.models import PendingMessage, ThinkProcess


@register_engine
class Ford(ThinkEngine):
    name = "ford"
    title = "Ford"
    description = "Minimal chat: user message → LLM → reply. No tools, no memory."
    version = "1.0.0"
    default_settings = {"systemPrompt": "You are Ford, a concise and helpful assistant."}

    @override
    def start(self, process: ThinkProcess, ctx: ThinkEngineContext) -> None:
        # A worker spawned with a goal answers it at once; the session's chat process waits
        # for the first chat message instead.
        if process.goal and not ctx.is_chat_process:
            self._answer(ctx, process.goal)

    @override
    def steer(
        self, process: ThinkProcess, ctx: ThinkEngineContext, message: PendingMessage
    ) -> None:
        self._answer(ctx, message.text)

    def _answer(self, ctx: ThinkEngineContext, text: str) -> None:
        ctx.conversation.append(LlmMessage(role="user", content=text))
        ctx.events.chat_message("user", text, at_once=True)
        system = str(ctx.settings.get("promptPrefix") or ctx.settings.get("systemPrompt", ""))
        prompt = [LlmMessage(role="system", content=system)] if system else []
        completion = ctx.llm.complete([*prompt, *ctx.conversation.history()])
        ctx.conversation.append(LlmMessage(role="assistant", content=completion.text))
        ctx.events.chat_message("assistant", completion.text)
