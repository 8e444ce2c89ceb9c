"""A provider for any server speaking OpenAI's chat-completions API.

One base URL covers OpenAI itself, vLLM, Ollama (`http://localhost:11434/v1`) and the llama.cpp
server. The request sends `max_tokens` rather than the newer `max_completion_tokens` because the
local servers understand only the former; the default model, gpt-4o-mini, accepts it too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)

from vancetope.llm.base import (
    CallInfo,
    LlmError,
    LlmMessage,
    LlmProvider,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolSchema,
    Usage,
)

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
# Local servers ignore the key but the SDK refuses to build a client without one.
PLACEHOLDER_API_KEY = "not-needed"


@dataclass
class _PartialToolCall:
    """A tool call as its fragments arrive: id and name first, arguments in pieces."""

    id: str = ""
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)

    def finish(self, index: int) -> ToolCall:
        raw_arguments = "".join(self.argument_parts)
        try:
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except json.JSONDecodeError as error:
            raise LlmError(
                f"model sent invalid JSON arguments for tool {self.name!r}: {error}: "
                f"{raw_arguments[:200]!r}"
            ) from error
        if not isinstance(arguments, dict):
            raise LlmError(
                f"model sent arguments for tool {self.name!r} that are not a JSON object: "
                f"{raw_arguments[:200]!r}"
            )
        # Some local servers leave the id out; the position keeps it unique within the reply.
        return ToolCall(id=self.id or f"call_{index}", name=self.name, arguments=arguments)


@dataclass
class _ChunkReader:
    """Turns streamed chunks into text deltas now, and tool calls and usage at the end."""

    partial_calls: dict[int, _PartialToolCall] = field(default_factory=dict)
    # Servers that ignore `include_usage` send none; the contract still wants one Usage.
    usage: Usage = field(default_factory=lambda: Usage(prompt_tokens=0, completion_tokens=0))

    def read(self, chunk: ChatCompletionChunk) -> Iterator[TextDelta]:
        if chunk.usage is not None:
            self.usage = Usage(
                prompt_tokens=chunk.usage.prompt_tokens,
                completion_tokens=chunk.usage.completion_tokens,
            )
        for choice in chunk.choices:
            # We never ask for n > 1; ignore extra choices a server might send.
            if choice.index != 0:
                continue
            if choice.delta.content:
                yield TextDelta(choice.delta.content)
            for fragment in choice.delta.tool_calls or []:
                partial = self.partial_calls.setdefault(fragment.index, _PartialToolCall())
                partial.id = fragment.id or partial.id
                if fragment.function and fragment.function.name:
                    partial.name += fragment.function.name
                if fragment.function and fragment.function.arguments:
                    partial.argument_parts.append(fragment.function.arguments)

    def finish(self) -> Iterator[ToolCall | Usage]:
        for index in sorted(self.partial_calls):
            yield self.partial_calls[index].finish(index)
        yield self.usage


class OpenAICompatibleProvider(LlmProvider):
    name = "openai"

    def __init__(
        self,
        *,
        model: str = "",
        base_url: str = "",
        api_key: str = "",
        timeout: float = 120.0,
        max_tokens: int = 4096,
        max_retries: int = 2,
    ) -> None:
        self.model = model or DEFAULT_OPENAI_MODEL
        self.base_url = base_url or DEFAULT_OPENAI_BASE_URL
        self.api_key = api_key or PLACEHOLDER_API_KEY
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.max_retries = max_retries

    def describe(self) -> str:
        return f"openai-compatible at {self.base_url}, model {self.model}"

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
    ) -> Iterator[StreamItem]:
        reader = _ChunkReader()
        try:
            # A client per call, so changed settings or credentials apply to the next call.
            with openai.OpenAI(
                base_url=self.base_url,
                api_key=self.api_key,
                timeout=self.timeout,
                max_retries=self.max_retries,
            ) as client:
                chunks = client.chat.completions.create(
                    model=(info.model if info else "") or self.model,
                    messages=[to_openai_message(message) for message in messages],
                    tools=[to_openai_tool(tool) for tool in tools] if tools else openai.omit,
                    max_tokens=self.max_tokens,
                    stream=True,
                    stream_options={"include_usage": True},
                )
                with chunks:
                    for chunk in chunks:
                        yield from reader.read(chunk)
        except openai.APIStatusError as error:
            raise LlmError(
                f"OpenAI-compatible server at {self.base_url} answered HTTP "
                f"{error.status_code}: {error.message}"
            ) from error
        except openai.APITimeoutError as error:
            raise LlmError(
                f"OpenAI-compatible server at {self.base_url} did not answer "
                f"within {self.timeout:g}s"
            ) from error
        except openai.APIConnectionError as error:
            # Raised both when the server cannot be reached and when the stream breaks off.
            raise LlmError(
                f"connection to OpenAI-compatible server at {self.base_url} failed: {error.message}"
            ) from error
        except openai.OpenAIError as error:
            raise LlmError(f"OpenAI-compatible server at {self.base_url}: {error}") from error
        except json.JSONDecodeError as error:
            # The SDK decodes each server-sent event itself and lets a malformed one through.
            raise LlmError(
                f"OpenAI-compatible server at {self.base_url} sent a malformed event: {error}"
            ) from error
        yield from reader.finish()


def to_openai_message(message: LlmMessage) -> ChatCompletionMessageParam:
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "user":
        return {"role": "user", "content": message.content}
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    return {
        "role": "assistant",
        # OpenAI wants null, not "", when the turn is only tool calls.
        "content": message.content or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ],
    }


def to_openai_tool(tool: ToolSchema) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
