"""`ctx.llm`: chat completion for engines. Streams text deltas to the client, counts tokens,
and checks the lane boundary between deltas (a pause or stop ends the call early)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from engines.context import TurnUsage
from sessions_app.event_sink import EventSink
from vancetope.llm.base import (
    CallInfo,
    Completion,
    LlmMessage,
    LlmProvider,
    TextDelta,
    ToolCall,
    ToolSchema,
)


class LlmAccess:
    def __init__(
        self,
        provider: LlmProvider,
        events: EventSink,
        usage: TurnUsage,
        boundary: Callable[[], None],
        info: CallInfo | None = None,
        before_call: Callable[[], None] | None = None,
    ) -> None:
        self.provider = provider
        # Checks the process tree's budgets before each call (processes/budgets.py).
        self._before_call = before_call
        # Who calls (engine, recipe); each call adds its step.
        self._info = info or CallInfo()
        self._events = events
        self._usage = usage
        self._boundary = boundary

    def stream(
        self, messages: list[LlmMessage], tools: list[ToolSchema] | None = None, *, step: str = ""
    ) -> Iterator[TextDelta | ToolCall]:
        # What the turn has to say (its start, the user's message) is out before the wait.
        self._events.store_held()
        if self._before_call is not None:
            self._before_call()
        info = CallInfo(self._info.engine, step, self._info.recipe)
        for item in self.provider.stream(messages, tools, info):
            if isinstance(item, TextDelta | ToolCall):
                yield item
                self._boundary()
            else:
                self._usage.prompt_tokens += item.prompt_tokens
                self._usage.completion_tokens += item.completion_tokens

    def complete(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        *,
        stream_to_client: bool = True,
        step: str = "",
    ) -> Completion:
        completion = Completion()
        parts: list[str] = []
        for item in self.stream(messages, tools, step=step):
            if isinstance(item, TextDelta):
                parts.append(item.text)
                if stream_to_client and item.text:
                    self._events.chat_delta(item.text)
            else:
                completion.tool_calls.append(item)
        completion.text = "".join(parts)
        return completion
