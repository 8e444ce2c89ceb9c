"""`ctx.llm`: chat completion for engines. Streams text deltas to the client, counts tokens,
and checks the lane boundary between deltas (a pause or stop ends the call early)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema

from engines.capabilities import StructuredOutputError
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
        fallback_model: str = "",
    ) -> None:
        self.provider = provider
        self.fallback_model = fallback_model
        # Checks the process tree's budgets before each call (processes/budgets.py).
        self._before_call = before_call
        # Who calls (engine, recipe); each call adds its step.
        self._info = info or CallInfo()
        self._events = events
        self._usage = usage
        self._boundary = boundary

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        *,
        step: str = "",
        model: str = "",
    ) -> Iterator[TextDelta | ToolCall]:
        # What the turn has to say (its start, the user's message) is out before the wait.
        self._events.store_held()
        if self._before_call is not None:
            self._before_call()
        info = CallInfo(self._info.engine, step, self._info.recipe, model)
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
        model: str = "",
    ) -> Completion:
        completion = Completion()
        parts: list[str] = []
        for item in self.stream(messages, tools, step=step, model=model):
            if isinstance(item, TextDelta):
                parts.append(item.text)
                if stream_to_client and item.text:
                    self._events.chat_delta(item.text)
            else:
                completion.tool_calls.append(item)
        completion.text = "".join(parts)
        return completion

    def structured(
        self, messages: list[LlmMessage], schema: ToolSchema, *, step: str, model: str = ""
    ) -> dict[str, Any]:
        prompt = list(messages)
        error = ""
        for _attempt in range(2):
            completion = self.complete(
                prompt, [schema], stream_to_client=False, step=step, model=model
            )
            calls = [call for call in completion.tool_calls if call.name == schema.name]
            if not calls:
                error = f"no {schema.name} call in the answer"
            else:
                try:
                    jsonschema.validate(calls[0].arguments, schema.parameters)
                    return dict(calls[0].arguments)
                except jsonschema.ValidationError as invalid:
                    where = "/".join(str(part) for part in invalid.absolute_path) or "arguments"
                    error = f"invalid {schema.name} arguments: {where}: {invalid.message}"
            # Once more, with what was wrong: the assistant's answer, then the error.
            prompt = [
                *prompt,
                LlmMessage(role="assistant", content=completion.text, tool_calls=tuple(calls[:1])),
                *(
                    [LlmMessage(role="tool", content=f"error: {error}", tool_call_id=calls[0].id)]
                    if calls
                    else []
                ),
                LlmMessage(
                    role="user",
                    content=f"[control: retry] {error}. Call {schema.name} with arguments "
                    f"matching its schema: {json.dumps(schema.parameters)}",
                ),
            ]
        raise StructuredOutputError(step, error)
