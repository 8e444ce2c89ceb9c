"""An LLM provider for tests of what the Brain sends: the scripted echo, keeping every call's
messages and CallInfo, with a window of its own (as a server that says its window would)."""

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

    def __init__(self, window: int | None = None) -> None:
        self.window = window
        self.calls: list[tuple[list[LlmMessage], CallInfo | None]] = []
        # The tools each call offered, in the order of `calls`.
        self.tools: list[list[ToolSchema]] = []
        # Steps whose calls fail (a provider failure), e.g. {"compact"}.
        self.failing_steps: set[str] = set()
        self._echo = ScriptedProvider()

    def context_window(self, model: str = "") -> int | None:
        return self.window

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
        return self._echo.stream(messages, tools, info, force_tool=force_tool)

    def sent(self, step: str = "answer") -> list[list[LlmMessage]]:
        """The messages of each call of `step`, oldest first."""
        return [messages for messages, info in self.calls if info and info.step == step]
