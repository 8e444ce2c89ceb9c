"""An LLM provider for tests of what the Brain sends: the scripted echo (or a real provider it
wraps), keeping every call's messages, CallInfo and tools, with a window of its own (as a
server that says its window would) or the wrapped provider's."""

from __future__ import annotations

from collections.abc import Iterator

from vancetope.llm.base import (
    CallInfo,
    LlmError,
    LlmMessage,
    LlmProvider,
    StreamItem,
    ToolSchema,
)
from vancetope.llm.scripted import ScriptedProvider


class RecordingProvider(LlmProvider):
    name = "recording"
    model = "recording"
    max_tokens = 4096

    def __init__(self, window: int | None = None, real: LlmProvider | None = None) -> None:
        self.window = window
        self.calls: list[tuple[list[LlmMessage], CallInfo | None]] = []
        # The tools each call offered, in the order of `calls`.
        self.tools: list[list[ToolSchema]] = []
        # Steps whose calls fail (a provider failure), e.g. {"compact"}.
        self.failing_steps: set[str] = set()
        self._real = real or ScriptedProvider()
        if real is not None:
            self.name, self.model, self.max_tokens = real.name, real.model, real.max_tokens

    def context_window(self, model: str = "") -> int | None:
        return self.window or self._real.context_window(model)

    def count_tokens(self, text: str) -> int | None:
        return self._real.count_tokens(text)

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Iterator[StreamItem]:
        self.calls.append((list(messages), info))
        self.tools.append(list(tools or []))
        if info is not None and info.step in self.failing_steps:
            raise LlmError(f"the provider refuses step {info.step}")
        return self._real.stream(messages, tools, info, force_tool=force_tool)

    def sent(self, *steps: str) -> list[list[LlmMessage]]:
        """The messages of each call of `steps` (default: ford's `answer`), oldest first."""
        wanted = steps or ("answer",)
        return [messages for messages, info in self.calls if info and info.step in wanted]
