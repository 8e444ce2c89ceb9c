"""`ctx.llm`: chat completion for engines. Streams text deltas to the client, counts tokens,
and checks the lane boundary between deltas (a pause or stop ends the call early)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema

from engines.capabilities import StructuredOutputError
from engines.context import TurnUsage
from sessions_app.event_sink import EventSink
from vancetope.errors import TurnControl
from vancetope.llm.base import (
    CallInfo,
    Completion,
    ForcedToolRefused,
    LlmMessage,
    LlmProvider,
    MalformedToolCall,
    TextDelta,
    ToolCall,
    ToolSchema,
)
from vancetope.observability.genai import LlmCallWatch

# Validators of the schemas structured steps use, by the schema's JSON: a schema is checked
# against its meta-schema once, not on every call (which cost more than the validation).
_validators: dict[str, Any] = {}
_validators_lock = threading.Lock()
CACHED_VALIDATORS = 256


def validator_of(schema: dict[str, Any]) -> Any:
    key = json.dumps(schema, sort_keys=True)
    validator = _validators.get(key)
    if validator is None:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = cls(schema)
        with _validators_lock:
            if len(_validators) >= CACHED_VALIDATORS:
                _validators.clear()
            _validators[key] = validator
    return validator


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
        force_tool: str | None = None,
    ) -> Iterator[TextDelta | ToolCall]:
        # What the turn has to say (its start, the user's message) is out before the wait.
        self._events.store_held()
        if self._before_call is not None:
            self._before_call()
        info = CallInfo(self._info.engine, step, self._info.recipe, model)
        watch = LlmCallWatch(self.provider.name, model or self.provider.model, step, messages)
        try:
            for item in self.provider.stream(messages, tools, info, force_tool=force_tool):
                if isinstance(item, TextDelta | ToolCall):
                    watch.saw(item)
                    yield item
                    self._boundary()
                else:
                    watch.usage = item
                    self._usage.prompt_tokens += item.prompt_tokens
                    self._usage.completion_tokens += item.completion_tokens
                    self._usage.estimated = self._usage.estimated or item.estimated
        except (TurnControl, GeneratorExit):
            watch.done("interrupted")
            raise
        except BaseException as exc:
            watch.done("error", exc)
            raise
        watch.done("ok")

    def complete(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        *,
        stream_to_client: bool = True,
        step: str = "",
        model: str = "",
        force_tool: str | None = None,
    ) -> Completion:
        completion = Completion()
        parts: list[str] = []
        for item in self.stream(messages, tools, step=step, model=model, force_tool=force_tool):
            if isinstance(item, TextDelta):
                parts.append(item.text)
                if stream_to_client and item.text:
                    self._events.chat_delta(item.text)
            else:
                completion.tool_calls.append(item)
        completion.text = "".join(parts)
        return completion

    def invalid(self, schema: ToolSchema, arguments: dict[str, Any]) -> str:
        try:
            validator_of(schema.parameters).validate(arguments)
        except jsonschema.ValidationError as invalid:
            where = "/".join(str(part) for part in invalid.absolute_path) or "arguments"
            return f"invalid {schema.name} arguments: {where}: {invalid.message}"
        return ""

    def structured(
        self, messages: list[LlmMessage], schema: ToolSchema, *, step: str, model: str = ""
    ) -> dict[str, Any]:
        prompt = list(messages)
        error = ""
        # The tool is forced (a small model seldom volunteers it); a server that refuses to be
        # forced is asked once more with the choice left to the model, and a failure then says
        # so, since the cause may be the refusal rather than the model.
        forced: str | None = schema.name
        refused = ""
        for _attempt in range(2):
            try:
                completion = self._structured_call(prompt, schema, step, model, forced)
            except ForcedToolRefused as refusal:
                forced, refused = None, f" (asked without forcing it: {refusal})"
                completion = self._structured_call(prompt, schema, step, model, None)
            calls = [call for call in completion.tool_calls if call.name == schema.name]
            if completion.malformed:
                error = completion.malformed
            elif not calls:
                error = f"no {schema.name} call in the answer"
            else:
                error = self.invalid(schema, calls[0].arguments)
                if not error:
                    return dict(calls[0].arguments)
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
        raise StructuredOutputError(step, error + refused)

    def _structured_call(
        self,
        prompt: list[LlmMessage],
        schema: ToolSchema,
        step: str,
        model: str,
        forced: str | None,
    ) -> Completion:
        """One call of a structured step; a call whose arguments do not parse (a small model
        cut off at the token limit) is an answer to send back, not a provider failure."""
        try:
            return self.complete(
                prompt, [schema], stream_to_client=False, step=step, model=model, force_tool=forced
            )
        except MalformedToolCall as malformed:
            return Completion(malformed=str(malformed))
