"""The one provider interface every LLM backend implements.

Messages and tool schemas go in; a stream of text deltas, tool calls and one usage record comes
out. Engines hold no clients: a provider is built, and cached, per configuration
(vancetope/llm/factory.py), so a change of settings or credentials gives the next call a new
provider.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A call the model asks for; `arguments` is the decoded JSON object."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class LlmMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # For role "tool": the id of the call this message answers.
    tool_call_id: str = ""


@dataclass(frozen=True)
class ToolSchema:
    """A tool as the model sees it: name, description, JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class CallInfo:
    """Who makes an LLM call: the engine, the step of it (each engine documents its steps in
    docs/engines.md, e.g. marvin `plan`) and the process's recipe, and the model the call asks
    for. Real providers read only `model` (empty: their configured model); the scripted
    provider's rules may match on all four."""

    engine: str = ""
    step: str = ""
    recipe: str = ""
    # A model other than the provider's configured one (a fallback); "" for the configured one.
    model: str = ""
    # The tokens the answer may take, when the call's context budget set them (a model whose
    # window is smaller than the configured max_tokens); 0: the provider's configured ones.
    max_tokens: int = 0


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    # True when the server reported no usage and the counts are the provider's estimate
    # (vancetope/llm/estimate.py), or were counted with a tokenizer rather than reported.
    estimated: bool = False
    # Why the model stopped, as its provider says it (`stop`, `tool_calls`, `end_turn`, …);
    # "" when the provider did not say. Traces carry it (gen_ai.response.finish_reasons); it
    # is no part of a usage's value (two usages of the same tokens are equal).
    finish_reason: str = field(default="", compare=False)


StreamItem = TextDelta | ToolCall | Usage


@dataclass
class Completion:
    """What a whole streamed call produced, collected by `collect`."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: Usage(0, 0))
    # Why the answer's tool call could not be read (MalformedToolCall); "" when it could.
    malformed: str = ""
    # Why the server refused to be forced to call the tool (ForcedToolRefused), as a turn's
    # journal keeps it; "" when it did not.
    refused: str = ""


class LlmError(Exception):
    """The provider failed: network, auth, rate limit or a malformed answer."""


class MalformedToolCall(LlmError):
    """The model's tool call has arguments that are not a JSON object (often cut off at the
    token limit). A structured step sends that back once, as it does a call that does not fit
    the schema; elsewhere it is a provider failure like any other."""


class IncompleteAnswer(LlmError):
    """The stream ended before the model said why it stopped (no finish reason): the server
    cut it (llama.cpp's server does when a prompt outgrows its context window) or the
    connection closed cleanly in the middle. Whatever arrived is not an answer: the call
    failed, and is retried like any other provider failure, never stored as a reply."""


class ForcedToolRefused(LlmError):
    """The server refused a call that forced a tool (`force_tool`): some OpenAI-compatible
    servers and older models reject `tool_choice` naming a function. The caller may ask once
    more without forcing (ctx.llm.structured does, and says so if that fails too)."""


class LlmProvider(ABC):
    """A chat-completion backend. Implementations must be safe to call from any thread."""

    name: str
    model: str
    # The tokens an answer may take (VANCETOPE_LLM_MAX_TOKENS); a call's CallInfo may ask
    # for fewer. 0: the provider sets no bound.
    max_tokens: int = 0

    @abstractmethod
    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Iterator[StreamItem]:
        """Yield text deltas and tool calls as they arrive, and exactly one Usage at the end.

        `force_tool` names one of `tools` the model must call (a structured step): the
        provider forces it the way its server allows (OpenAI's and Anthropic's `tool_choice`,
        a grammar for the local model). A server that refuses to be forced raises
        ForcedToolRefused; None leaves the choice to the model."""

    def context_window(self, model: str = "") -> int | None:
        """The context window in tokens of `model` ("" for the configured one) as the server
        (or the local model) says, or None where it does not say: the caller then reads the
        `llm.contextWindow` setting, then the table of well-known models
        (vancetope/llm/windows.py). Never raises; a provider may cache what it found."""
        return None

    def count_tokens(self, text: str) -> int | None:
        """How many tokens `text` is for the model's own tokenizer, or None where no tokenizer
        is at hand (the caller then estimates: vancetope/llm/estimate.py). Never raises."""
        return None

    def describe(self) -> str:
        return f"{self.name} (model {self.model})"


def collect(items: Iterator[StreamItem]) -> Completion:
    """Drain a stream into one Completion (for callers that do not stream)."""
    completion = Completion()
    parts: list[str] = []
    for item in items:
        if isinstance(item, TextDelta):
            parts.append(item.text)
        elif isinstance(item, ToolCall):
            completion.tool_calls.append(item)
        else:
            completion.usage = item
    completion.text = "".join(parts)
    return completion
