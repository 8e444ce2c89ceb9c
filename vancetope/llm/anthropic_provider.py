"""A provider for Anthropic's Messages API, streamed through the official SDK.

The Messages API differs from chat completions in three ways that shape the mapping below: the
system prompt is a parameter, not a message; tool calls and tool results are content blocks of
assistant and user turns; and consecutive turns of one role must be merged into one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anthropic
import httpx2
from anthropic.types import (
    ContentBlockParam,
    InputJSONDelta,
    MessageDeltaUsage,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStreamEvent,
    TextBlock,
    ToolChoiceToolParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
)
from anthropic.types import TextDelta as AnthropicTextDelta
from anthropic.types import Usage as AnthropicUsage

from vancetope.llm.base import (
    CallInfo,
    ForcedToolRefused,
    IncompleteAnswer,
    LlmError,
    LlmMessage,
    LlmProvider,
    MalformedToolCall,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolSchema,
    Usage,
)
from vancetope.llm.estimate import estimate_usage

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
# A current, non-deprecated general model; VANCETOPE_LLM_MODEL overrides it.
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
# What a server answers when it does not take a forced `tool_choice` (some compatible
# gateways, or a model with extended thinking on); only then is the call asked again unforced.
REFUSED_STATUSES = frozenset({400, 422})


@dataclass
class _PartialToolUse:
    id: str
    name: str
    initial_input: dict[str, Any]
    json_parts: list[str] = field(default_factory=list)

    def finish(self) -> ToolCall:
        raw_input = "".join(self.json_parts)
        if not raw_input.strip():
            return ToolCall(id=self.id, name=self.name, arguments=self.initial_input)
        try:
            arguments = json.loads(raw_input)
        except json.JSONDecodeError as error:
            raise MalformedToolCall(
                f"model sent invalid JSON input for tool {self.name!r}: {error}: "
                f"{raw_input[:200]!r}"
            ) from error
        if not isinstance(arguments, dict):
            raise MalformedToolCall(
                f"model sent input for tool {self.name!r} that is not a JSON object: "
                f"{raw_input[:200]!r}"
            )
        return ToolCall(id=self.id, name=self.name, arguments=arguments)


@dataclass
class _EventReader:
    """Turns raw stream events into text deltas and finished tool calls; tallies usage."""

    tool_uses: dict[int, _PartialToolUse] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Whether the server said anything of usage; a gateway that does not is estimated.
    reported: bool = False
    text_parts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    stop_reason: str = ""

    def read(self, event: RawMessageStreamEvent) -> Iterator[TextDelta | ToolCall]:
        for item in self._read(event):
            if isinstance(item, TextDelta):
                self.text_parts.append(item.text)
            else:
                self.calls.append(item)
            yield item

    def _read(self, event: RawMessageStreamEvent) -> Iterator[TextDelta | ToolCall]:
        if isinstance(event, RawMessageStartEvent):
            usage_given = getattr(event.message, "usage", None)
            if usage_given is not None:
                self.reported = True
                self.prompt_tokens = _total_input_tokens(usage_given)
                self.completion_tokens = usage_given.output_tokens
        elif isinstance(event, RawMessageDeltaEvent):
            # Delta usage is cumulative. Some Anthropic-compatible gateways send none, and input
            # counts only appear on some servers.
            usage: MessageDeltaUsage | None = getattr(event, "usage", None)
            self.stop_reason = str(getattr(event.delta, "stop_reason", None) or self.stop_reason)
            if usage is not None:
                self.reported = True
                self.completion_tokens = usage.output_tokens
                if usage.input_tokens is not None:
                    self.prompt_tokens = _total_input_tokens(usage)
        elif isinstance(event, RawContentBlockStartEvent):
            block = event.content_block
            if isinstance(block, ToolUseBlock):
                self.tool_uses[event.index] = _PartialToolUse(
                    block.id, block.name, dict(block.input)
                )
            elif isinstance(block, TextBlock) and block.text:
                yield TextDelta(block.text)
        elif isinstance(event, RawContentBlockDeltaEvent):
            delta = event.delta
            if isinstance(delta, AnthropicTextDelta) and delta.text:
                yield TextDelta(delta.text)
            elif isinstance(delta, InputJSONDelta) and event.index in self.tool_uses:
                self.tool_uses[event.index].json_parts.append(delta.partial_json)
        elif isinstance(event, RawContentBlockStopEvent) and event.index in self.tool_uses:
            yield self.tool_uses.pop(event.index).finish()

    def usage(self, messages: list[LlmMessage], tools: list[ToolSchema] | None) -> Usage:
        if not self.reported or (self.prompt_tokens == 0 and self.completion_tokens == 0):
            estimated = estimate_usage(messages, tools, "".join(self.text_parts), self.calls)
            return replace(estimated, finish_reason=self.stop_reason)
        return Usage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            finish_reason=self.stop_reason,
        )


class AnthropicProvider(LlmProvider):
    name = "anthropic"

    def __init__(
        self,
        *,
        model: str = "",
        api_key: str = "",
        base_url: str = "",
        timeout: float = 120.0,
        max_tokens: int = 4096,
        max_retries: int = 2,
    ) -> None:
        self.model = model or DEFAULT_ANTHROPIC_MODEL
        self.api_key = api_key
        self.base_url = base_url
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.max_retries = max_retries

    def describe(self) -> str:
        return f"anthropic at {self.base_url or DEFAULT_ANTHROPIC_BASE_URL}, model {self.model}"

    def context_window(self, model: str = "") -> int | None:
        """None: the Messages API does not say a model's window, and every Claude model's is in
        the table of well-known models (vancetope/llm/windows.py)."""
        return None

    def count_tokens(self, text: str) -> int | None:
        """None: Claude's tokenizer is not published, and the API's token counting takes a
        whole request in a round trip of its own, not a text; the caller estimates
        (vancetope/llm/estimate.py)."""
        return None

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Iterator[StreamItem]:
        system_prompt = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        where = self.base_url or DEFAULT_ANTHROPIC_BASE_URL
        reader = _EventReader()
        # Set once the server answered: a connection lost after that broke off the stream.
        answered = False
        try:
            # A client per call, so changed settings or credentials apply to the next call. An
            # empty key or base URL is left to the SDK's own lookup (environment, profiles).
            with anthropic.Anthropic(
                api_key=self.api_key or None,
                base_url=self.base_url or None,
                timeout=self.timeout,
                max_retries=self.max_retries,
                # No redirect is followed: it could lead the call and its key off the allowed
                # hosts (a server that answers one is a failed call).
                http_client=anthropic.DefaultHttpxClient(follow_redirects=False),
            ) as client:
                events = client.messages.create(
                    model=(info.model if info else "") or self.model,
                    max_tokens=(info.max_tokens if info else 0) or self.max_tokens,
                    messages=to_anthropic_messages(messages),
                    system=system_prompt or anthropic.omit,
                    tools=[to_anthropic_tool(tool) for tool in tools] if tools else anthropic.omit,
                    tool_choice=forced_choice(force_tool) if force_tool else anthropic.omit,
                    stream=True,
                )
                answered = True
                with events:
                    for event in events:
                        yield from reader.read(event)
            if not reader.stop_reason:
                # No message_delta with a stop reason: the stream was cut, not finished.
                raise IncompleteAnswer(
                    f"Anthropic API at {where} ended its stream without a stop reason after "
                    f"{len(''.join(reader.text_parts))} characters: the answer is incomplete"
                )
        except anthropic.APIStatusError as error:
            detail = error.api_message or error.message
            if force_tool and error.status_code in REFUSED_STATUSES:
                raise ForcedToolRefused(
                    f"Anthropic API at {where} refused tool_choice {force_tool!r}: HTTP "
                    f"{error.status_code}: {detail}"
                ) from error
            raise LlmError(
                f"Anthropic API at {where} answered HTTP {error.status_code}: {detail}"
            ) from error
        except anthropic.APITimeoutError as error:
            raise LlmError(
                f"Anthropic API at {where} did not answer within {self.timeout:g}s"
            ) from error
        except anthropic.APIConnectionError as error:
            if answered:
                # Newer SDKs wrap a connection lost mid-stream too (older ones: below).
                raise LlmError(
                    f"Anthropic API at {where} broke off the stream: {error.message}"
                ) from error
            raise LlmError(f"cannot reach Anthropic API at {where}: {error.message}") from error
        except anthropic.AnthropicError as error:
            raise LlmError(f"Anthropic API at {where}: {error}") from error
        except httpx2.HTTPError as error:
            # A connection lost mid-stream, which older SDKs do not wrap.
            raise LlmError(f"Anthropic API at {where} broke off the stream: {error!r}") from error
        except json.JSONDecodeError as error:
            raise LlmError(f"Anthropic API at {where} sent a malformed event: {error}") from error
        yield reader.usage(messages, tools)


def forced_choice(name: str) -> ToolChoiceToolParam:
    return {"type": "tool", "name": name}


def _total_input_tokens(usage: AnthropicUsage | MessageDeltaUsage) -> int:
    """Input tokens as billed: uncached plus cache writes plus cache reads."""
    return (
        (usage.input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )


def to_anthropic_messages(messages: list[LlmMessage]) -> list[MessageParam]:
    """Map the conversation to Messages API turns; system messages go to `system` instead."""
    turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []
    for message in messages:
        if message.role == "system":
            continue
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = _content_blocks(message)
        if not blocks:
            # The API rejects empty text blocks, and an empty turn carries nothing.
            continue
        if turns and turns[-1][0] == role:
            # Tool results following one assistant turn must arrive as a single user turn.
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [_turn(role, blocks) for role, blocks in turns]


def _turn(role: Literal["user", "assistant"], blocks: list[ContentBlockParam]) -> MessageParam:
    if role == "assistant":
        return {"role": "assistant", "content": blocks}
    return {"role": "user", "content": blocks}


def _content_blocks(message: LlmMessage) -> list[ContentBlockParam]:
    if message.role == "tool":
        result: ToolResultBlockParam = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        return [result]
    blocks: list[ContentBlockParam] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    return blocks


def to_anthropic_tool(tool: ToolSchema) -> ToolParam:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
