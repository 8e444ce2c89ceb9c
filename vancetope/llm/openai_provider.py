"""A provider for any server speaking OpenAI's chat-completions API.

One base URL covers OpenAI itself, vLLM, Ollama (`http://localhost:11434/v1`) and the llama.cpp
server. The request sends `max_tokens` rather than the newer `max_completion_tokens` because the
local servers understand only the former; the default model, gpt-4o-mini, accepts it too.

The OpenAI API says nothing of a model's context window or its tokenizer, but the local servers
do, each at an endpoint of its own beside the API (ServerProbe): llama.cpp's `/props` and
`/tokenize`, Ollama's `/api/show`, llama-cpp-python's `/extras/tokenize/count`. A provider asks
for them once and remembers the answer, including that there is none.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionNamedToolChoiceParam,
)

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
from vancetope.llm.server_probe import ServerProbe

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
# Local servers ignore the key but the SDK refuses to build a client without one.
PLACEHOLDER_API_KEY = "not-needed"
# What a server answers when it does not take a `tool_choice` naming a function (a bad
# request, or a body it cannot process); only then is the forced call asked again unforced.
REFUSED_STATUSES = frozenset({400, 422})


@dataclass
class _PartialToolCall:
    """A tool call as its fragments arrive: id and name first, arguments in pieces."""

    id: str = ""
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)

    def finish(self, index: int) -> ToolCall:
        raw_arguments = "".join(self.argument_parts)
        try:
            # strict=False: a raw newline or tab inside a string (small models write them, and
            # llama.cpp's grammars let them through) is read as the character it is.
            arguments = json.loads(raw_arguments, strict=False) if raw_arguments.strip() else {}
        except json.JSONDecodeError as error:
            raise MalformedToolCall(
                f"model sent invalid JSON arguments for tool {self.name!r}: {error}: "
                f"{raw_arguments[:200]!r}"
            ) from error
        if not isinstance(arguments, dict):
            raise MalformedToolCall(
                f"model sent arguments for tool {self.name!r} that are not a JSON object: "
                f"{raw_arguments[:200]!r}"
            )
        # Some local servers leave the id out; the position keeps it unique within the reply.
        return ToolCall(id=self.id or f"call_{index}", name=self.name, arguments=arguments)


# An HTML character reference (`&#34;`, `&lt;`, `&amp;` …).
ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|lt|gt|amp|quot|apos);")


def entities_copied_undone(call: ToolCall, messages: list[LlmMessage]) -> ToolCall:
    """A call whose arguments hold HTML character references that nothing the model was sent
    holds, with them decoded. llama-cpp-python's server renders a function-calling prompt with
    Jinja's HTML autoescape, so a small model reads `Compare &#34;A&#34; &lt;b&gt;` and copies
    the references into its arguments (a plan's titles, a worker's result); a reference the
    prompt did hold (a person writing about HTML) is left as the model wrote it."""
    texts = list(_strings(call.arguments))
    if not any(ENTITY.search(text) for text in texts):
        return call
    if any(ENTITY.search(message.content) for message in messages):
        return call
    return replace(call, arguments=_decoded(call.arguments))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        return html.unescape(value)
    if isinstance(value, dict):
        return {key: _decoded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decoded(item) for item in value]
    return value


@dataclass
class ChunkReader:
    """Turns streamed chunks into text deltas now, and tool calls and usage at the end."""

    partial_calls: dict[int, _PartialToolCall] = field(default_factory=dict)
    # Servers that ignore `include_usage` send none: `finish` estimates it from what was said.
    usage: Usage | None = None
    finish_reason: str = ""
    text_parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

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
            if choice.finish_reason:
                self.finish_reason = str(choice.finish_reason)
            if choice.delta.content:
                self.text_parts.append(choice.delta.content)
                yield TextDelta(choice.delta.content)
            for fragment in choice.delta.tool_calls or []:
                partial = self.partial_calls.setdefault(fragment.index, _PartialToolCall())
                partial.id = fragment.id or partial.id
                if fragment.function and fragment.function.name:
                    # OpenAI sends the name once; llama.cpp's Python server repeats it whole in
                    # every fragment of the call, which must not make it "nn…".
                    if fragment.function.name != partial.name:
                        partial.name += fragment.function.name
                if fragment.function and fragment.function.arguments:
                    partial.argument_parts.append(fragment.function.arguments)

    def check_finished(self, where: str) -> None:
        """A stream that ended without a finish reason was cut, however cleanly it closed: its
        text so far is not an answer (IncompleteAnswer), whatever it holds."""
        if not self.finish_reason:
            raise IncompleteAnswer(
                f"{where} ended its stream without a finish reason after "
                f"{len(self.text)} characters and {len(self.partial_calls)} tool calls: "
                "the answer is incomplete"
            )

    def tool_calls(self) -> list[ToolCall]:
        return [self.partial_calls[index].finish(index) for index in sorted(self.partial_calls)]

    def finish(
        self, messages: list[LlmMessage], tools: list[ToolSchema] | None
    ) -> Iterator[ToolCall | Usage]:
        calls = [entities_copied_undone(call, messages) for call in self.tool_calls()]
        yield from calls
        if self.usage is None:
            usage = estimate_usage(messages, tools, "".join(self.text_parts), calls)
        else:
            usage = self.usage
        yield replace(usage, finish_reason=self.finish_reason)


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
        temperature: float | None = None,
        max_concurrent: int = 0,
    ) -> None:
        self.model = model or DEFAULT_OPENAI_MODEL
        self.base_url = base_url or DEFAULT_OPENAI_BASE_URL
        self.api_key = api_key or PLACEHOLDER_API_KEY
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        # None: the server's own default (VANCETOPE_LLM_TEMPERATURE unset).
        self.temperature = temperature
        self._client_lock = threading.Lock()
        self._kept_client: openai.OpenAI | None = None
        # At most this many calls to the server at once from this OS process (0: no bound).
        self._slots = server_slots(self.base_url, max_concurrent)
        self._probe = ServerProbe(self.base_url, self.api_key)

    def describe(self) -> str:
        return f"openai-compatible at {self.base_url}, model {self.model}"

    def _client(self) -> openai.OpenAI:
        """One client per provider, made on its first call: building one costs 20-40 ms (an
        SSL context), which every call would add to its time to first token, and a kept client
        keeps its connections open. Settings cannot go stale: the factory builds a new
        provider when any setting it was built from changes. The client is thread-safe."""
        with self._client_lock:
            if self._kept_client is None:
                self._kept_client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                    default_headers=self._identifiers(),
                    # A redirect could lead a call (and its key) off the allowed hosts: none
                    # is followed; a server that answers one is a failed call.
                    http_client=openai.DefaultHttpxClient(follow_redirects=False),
                )
            return self._kept_client

    def _identifiers(self) -> dict[str, Any]:
        """The SDK sends the operator's OPENAI_ORG_ID and OPENAI_PROJECT_ID (from the
        environment) with every request: only to the operator's own URL (OPENAI_BASE_URL, or
        OpenAI's when that is not set), never to a URL a tenant's or project's llm.baseUrl
        names."""
        from vancetope.llm.factory import environment_url

        operators = (environment_url("openai") or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        if self.base_url.rstrip("/") == operators:
            return {}
        return {"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()}

    def context_window(self, model: str = "") -> int | None:
        """What the server says, asked once per model: llama.cpp's `/props`, else Ollama's
        `/api/show` (ServerProbe.window). OpenAI itself and vLLM say nothing here: None."""
        return self._probe.window(model or self.model)

    def count_tokens(self, text: str) -> int | None:
        """The server's own tokenizer where it has one (llama.cpp's servers), each text once
        (ServerProbe.count); None for a server without one, with no request after the first."""
        return self._probe.count(text)

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Iterator[StreamItem]:
        reader = ChunkReader()
        if self._slots is not None:
            # Held for the whole stream; a caller that stops reading closes the generator,
            # which lets the slot go.
            self._slots.acquire()
        try:
            chunks = self._client().chat.completions.create(
                model=(info.model if info else "") or self.model,
                messages=[to_openai_message(message) for message in messages],
                tools=[to_openai_tool(tool) for tool in tools] if tools else openai.omit,
                tool_choice=forced_choice(force_tool) if force_tool else openai.omit,
                max_tokens=(info.max_tokens if info else 0) or self.max_tokens,
                temperature=openai.omit if self.temperature is None else self.temperature,
                stream=True,
                stream_options={"include_usage": True},
            )
            with chunks:
                for chunk in chunks:
                    yield from reader.read(chunk)
            reader.check_finished(f"OpenAI-compatible server at {self.base_url}")
        except openai.APIStatusError as error:
            if force_tool and error.status_code in REFUSED_STATUSES:
                raise ForcedToolRefused(
                    f"OpenAI-compatible server at {self.base_url} refused tool_choice "
                    f"{force_tool!r}: HTTP {error.status_code}: {error.message}"
                ) from error
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
        finally:
            if self._slots is not None:
                self._slots.release()
        yield from reader.finish(messages, tools)


_server_slots: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_server_slots_lock = threading.Lock()


def server_slots(base_url: str, limit: int) -> threading.BoundedSemaphore | None:
    """The calls in flight to one server from this OS process, shared by every provider of
    that URL, or None without a limit. llama.cpp's Python server answers one request at a
    time and garbles streams it is sent at once (three of four concurrent forced calls came
    back without their tool call): VANCETOPE_LLM_MAX_CONCURRENT=1 queues them here."""
    if limit <= 0:
        return None
    with _server_slots_lock:
        return _server_slots.setdefault((base_url, limit), threading.BoundedSemaphore(limit))


def forced_choice(name: str) -> ChatCompletionNamedToolChoiceParam:
    return {"type": "function", "function": {"name": name}}


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
        # "" rather than null when the turn is only tool calls: OpenAI takes either, and
        # llama.cpp's server answers HTTP 500 to a null content.
        "content": message.content,
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
