"""Counting the tokens of what a call sends (vancetope/llm/assembly.py): with the model's own
tokenizer where the provider has one at hand, else the estimate of about four characters a
token (vancetope/llm/estimate.py), plus what the chat template wraps each message in."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from vancetope.llm.base import LlmMessage, ToolSchema
from vancetope.llm.estimate import completion_text, estimate_tokens

# The tokens a chat template wraps each message in, beyond its text: ChatML's `<|im_start|>`, the
# role, a newline, `<|im_end|>` and a newline, measured 5.6 a message with llama.cpp's server
# (SmolLM2, chatml-function-calling); the estimate of usage (vancetope/llm/estimate.py) takes 4.
MESSAGE_OVERHEAD = 6

TokenCounter = Callable[[str], int]


class Tokens:
    """Counts tokens of messages with `count` (the model's tokenizer, or the estimate). Each
    message is counted once per Tokens (an assembly weighs the same turns several times; a
    turn's calls share one): by the message object, which the Tokens keeps while it lives, so
    an id is never another message's."""

    def __init__(self, count: TokenCounter | None = None) -> None:
        self.counted = count is not None
        self._count = count or estimate_tokens
        self._sizes: dict[int, tuple[LlmMessage, int]] = {}
        self._tool_sizes: dict[int, tuple[ToolSchema, int]] = {}

    def text(self, text: str) -> int:
        return self._count(text) if text else 0

    def message(self, message: LlmMessage) -> int:
        known = self._sizes.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        size = MESSAGE_OVERHEAD + self.text(message.content)
        if message.tool_calls:
            size += self.text(completion_text("", message.tool_calls))
        self._sizes[id(message)] = (message, size)
        return size

    def messages(self, messages: Sequence[LlmMessage]) -> int:
        return sum(map(self.message, messages))

    def tools(self, tools: Sequence[ToolSchema] | None) -> int:
        return sum(map(self.tool, tools or ()))

    def tool(self, tool: ToolSchema) -> int:
        """A tool's schema as the model reads it; once per tool object, as a message."""
        known = self._tool_sizes.get(id(tool))
        if known is not None and known[0] is tool:
            return known[1]
        size = self.text(f"{tool.name} {tool.description} {json.dumps(tool.parameters)}")
        self._tool_sizes[id(tool)] = (tool, size)
        return size
