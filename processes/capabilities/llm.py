"""`ctx.llm`: chat completion for engines. Streams text deltas to the client, counts tokens,
and checks the lane boundary between deltas (a pause or stop ends the call early)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import jsonschema

from engines.capabilities import StructuredOutputError
from engines.context import TurnUsage
from sessions_app.event_sink import EventSink
from vancetope import failpoints
from vancetope.errors import TurnControl
from vancetope.llm.assembly import (
    Assembled,
    Budget,
    Folded,
    assemble,
    budget_for,
    fit_tools,
)
from vancetope.llm.base import (
    CallInfo,
    Completion,
    ForcedToolRefused,
    LlmError,
    LlmMessage,
    LlmProvider,
    MalformedToolCall,
    TextDelta,
    ToolCall,
    ToolSchema,
    Usage,
)
from vancetope.llm.estimate import estimate_tokens
from vancetope.llm.tokens import Tokens
from vancetope.llm.windows import is_small_model, known_window
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


class LlmJournal(Protocol):
    """The journal of the turn attempt whose calls these are (processes/lane/journal.py)."""

    def take_step(self) -> int: ...

    def completion(self, step: int, name: str) -> Completion | None: ...

    def record_completion(self, step: int, name: str, completion: Completion) -> None: ...


@dataclass(frozen=True)
class ReplayedText(TextDelta):
    """Text answered from the journal: the client saw it stream the first time."""


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
        window_setting: int = 0,
        folded: Callable[[], Folded | None] | None = None,
        history: Callable[[], list[LlmMessage]] | None = None,
        model_size: str = "auto",
        journal: LlmJournal | None = None,
    ) -> None:
        self.provider = provider
        # A retried turn's calls are answered from its journal, in order, while they match.
        self._journal = journal
        self.fallback_model = fallback_model
        # The llm.modelSize setting, "auto" deciding by the table of well-known small models.
        self.small_model = (
            model_size == "small"
            if model_size in ("small", "large")
            else is_small_model(provider.model)
        )
        # The llm.contextWindow setting: the window when the server does not say.
        self._window_setting = window_setting
        # The conversation's active compaction (processes/lane/compaction.py), read at the
        # first call of the turn whose window is known; and the history it folds the start of.
        self._folded = folded
        self._compaction: Folded | None = None
        self._history = history or (lambda: [])
        # The folded turns most relevant to a text (processes/capabilities/recall.py), for
        # the calls of a conversation that has a compaction; set by the context builder.
        self.recall: Callable[[str, list[LlmMessage]], list[LlmMessage]] | None = None
        self._recalled: dict[str, list[LlmMessage]] = {}
        self._tokens: Tokens | None = None

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
        journal = self._journal
        if journal is None:
            yield from self._live(messages, tools, step, model, force_tool)
            return
        index = journal.take_step()
        recorded = journal.completion(index, step)
        if recorded is not None:
            yield from self._replayed(recorded)
            return
        answer = _Answer()
        try:
            yield from self._live(messages, tools, step, model, force_tool, answer)
        except (MalformedToolCall, ForcedToolRefused) as refused:
            # An answer the engine handles (structured steps do): the same for a retry.
            journal.record_completion(index, step, answer.completion(refused))
            raise
        journal.record_completion(index, step, answer.completion())

    def _replayed(self, recorded: Completion) -> Iterator[TextDelta | ToolCall]:
        """A completion answered from the journal: no request, nothing streamed to the client
        again. Its tokens were spent by an attempt that did not commit, and count once, with
        the turn that does."""
        self._usage.prompt_tokens += recorded.usage.prompt_tokens
        self._usage.completion_tokens += recorded.usage.completion_tokens
        self._usage.llm_calls += 1
        self._usage.estimated = self._usage.estimated or recorded.usage.estimated
        if recorded.text:
            yield ReplayedText(recorded.text)
        yield from recorded.tool_calls
        if recorded.malformed:
            raise MalformedToolCall(recorded.malformed)
        if recorded.refused:
            raise ForcedToolRefused(recorded.refused)

    def _live(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None,
        step: str,
        model: str,
        force_tool: str | None,
        into: _Answer | None = None,
    ) -> Iterator[TextDelta | ToolCall]:
        """The call made to the provider; what it answers is collected `into` a completion
        (for the journal) as it streams."""
        if self._before_call is not None:
            self._before_call()
        assembled = self._assemble(messages, tools, model, force_tool)
        info = CallInfo(self._info.engine, step, self._info.recipe, model)
        if assembled is not None:
            messages, tools = assembled.messages, assembled.tools
            info = replace(info, max_tokens=assembled.budget.completion if assembled.budget else 0)
        watch = LlmCallWatch(self.provider.name, model or self.provider.model, step, messages)
        if assembled is not None:
            self._usage.last_call = assembled.report() | {"step": step}
            watch.assembled(self._usage.last_call)
        arriving = True
        try:
            for item in self.provider.stream(messages, tools, info, force_tool=force_tool):
                if isinstance(item, TextDelta | ToolCall):
                    watch.saw(item)
                    if into is not None:
                        into.saw(item)
                    yield item
                    if arriving:  # the answer has begun to arrive
                        failpoints.reach("llm-streaming")
                        arriving = False
                    self._boundary()
                else:
                    watch.usage = item
                    if into is not None:
                        into.usage = _added(into.usage, item)
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

    def window(self, model: str = "") -> int | None:
        """The model's context window: as its server says, else the llm.contextWindow
        setting, else the table of well-known models; None when none knows it."""
        return (
            self.provider.context_window(model)
            or self._window_setting
            or known_window(model or self.provider.model)
        )

    def tokens(self) -> Tokens:
        """The turn's counter of tokens: the model's tokenizer where the provider has one at
        hand, else the estimate; one per turn, so each message is counted once."""
        if self._tokens is None:
            provider = self.provider
            if provider.count_tokens("a") is None:
                self._tokens = Tokens()
            else:
                self._tokens = Tokens(
                    lambda text: provider.count_tokens(text) or estimate_tokens(text)
                )
        return self._tokens

    def budget(self, tools: list[ToolSchema] | None, model: str = "") -> Budget | None:
        """The budget of a call with `tools` (vancetope/llm/assembly.py); None when the
        model's window is unknown."""
        window = self.window(model)
        if not window:
            return None
        return budget_for(window, self.provider.max_tokens, tools, self.tokens())

    def room(self, tools: list[ToolSchema] | None = None) -> int | None:
        budget = self.budget(tools)
        return None if budget is None else budget.prompt

    def _assemble(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None,
        model: str,
        force_tool: str | None = None,
    ) -> Assembled | None:
        """The call's messages (and tools) within its model's window
        (vancetope/llm/assembly.py), or None when the window is unknown (the scripted provider
        unless a window is set): then the call goes as the engine built it. The conversation's
        compaction, if it has one, stands for the messages it folded."""
        window = self.window(model)
        if not window:
            return None
        tokens = self.tokens()
        offered, left_out = fit_tools(tools, window, tokens, keep=force_tool)
        budget = budget_for(window, self.provider.max_tokens, offered, tokens)
        if self._folded is not None and self._compaction is None:
            self._compaction = self._folded() or Folded("", 0)
        found = self._compaction
        folded = self._history()[: found.messages] if found is not None and found.messages else []
        assembled = assemble(
            messages,
            budget,
            tokens,
            summary=found.summary if folded and found is not None else "",
            folded=folded,
            recalled=self._recall_for(messages, folded) if folded else (),
        )
        assembled.tools, assembled.tools_left_out = offered if tools else None, left_out
        return assembled

    def _recall_for(self, messages: list[LlmMessage], folded: list[LlmMessage]) -> list[LlmMessage]:
        """The recalled turns for the message a call answers (its last user message), once
        per text in a turn (a tool loop asks again with the same message)."""
        if self.recall is None:
            return []
        query = next((m.content for m in reversed(messages) if m.role == "user"), "")
        if query not in self._recalled:
            self._recalled[query] = self.recall(query, folded)
        return self._recalled[query]

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
                if stream_to_client and item.text and not isinstance(item, ReplayedText):
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


@dataclass
class _Answer:
    """What a live call answered, collected for the journal as it streams."""

    parts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: Usage(0, 0))

    def saw(self, item: TextDelta | ToolCall) -> None:
        if isinstance(item, TextDelta):
            self.parts.append(item.text)
        else:
            self.tool_calls.append(item)

    def completion(self, refused: LlmError | None = None) -> Completion:
        completion = Completion("".join(self.parts), list(self.tool_calls), self.usage)
        if isinstance(refused, MalformedToolCall):
            completion.malformed = str(refused)
        elif refused is not None:
            completion.refused = str(refused)
        return completion


def _added(total: Usage, item: Usage) -> Usage:
    return Usage(
        total.prompt_tokens + item.prompt_tokens,
        total.completion_tokens + item.completion_tokens,
        total.estimated or item.estimated,
    )
