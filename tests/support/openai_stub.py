"""A local OpenAI-compatible server, so the real `openai` client is tested without the internet.

    with OpenAIStubServer() as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url)
        ...
        assert stub.requests[0]["messages"][-1]["content"] == "hello"

By default it answers `echo: ` + the last user message, streamed one word per chunk. Queue
`StubReply`s (text, tool calls, an HTTP error, an explicit usage) to answer the next requests
instead; once the queue is empty it echoes again. `tool_choices` lists the `tool_choice` of
each request (None where it had none); set `refuse_forced_tool_choice` and a request that
names a tool in `tool_choice` is answered HTTP 400, as servers that do not take one answer
(the queued reply is kept for the next request).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Literal, Self

STUB_MODEL = "stub-model"


@dataclass(frozen=True)
class StubToolCall:
    name: str
    # A dict is sent as JSON; a string is sent verbatim (to test malformed arguments).
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = ""

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class StubReply:
    """One scripted answer. `status` >= 400 answers with an error body instead."""

    text: str = ""
    tool_calls: tuple[StubToolCall, ...] = ()
    # (prompt_tokens, completion_tokens); None means "count words" like the echo does.
    usage: tuple[int, int] | None = None
    # Leave usage out of the stream even when the client asks for it.
    omit_usage: bool = False
    status: int = 200
    error_message: str = "stub error"
    # Anthropic stub: leave usage out of `message_start` too (a gateway that reports none).
    omit_start_usage: bool = False
    # Cut the stream before its finish reason, as llama.cpp's server does: "close" ends the body
    # there (a prompt over the context window fails after the first chunk went out), "done"
    # sends `[DONE]` there (another request interrupted this one), "error" sends an error
    # event there. The Anthropic stub leaves out `message_delta` and `message_stop` for any.
    cut: Literal["", "close", "done", "error"] = ""


@dataclass
class RecordedRequest:
    method: str
    path: str
    # Lower-cased names: HTTP header names are case-insensitive and the SDKs differ.
    headers: dict[str, str]
    body: dict[str, Any]


def split_into_chunks(text: str) -> list[str]:
    """One chunk per word with its trailing whitespace; the chunks join back to `text`."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def split_in_three(text: str) -> list[str]:
    """Cut a string into up to three fragments, as servers stream tool-call arguments."""
    if len(text) < 3:
        return [text] if text else []
    third = len(text) // 3
    return [text[:third], text[third : 2 * third], text[2 * third :]]


def count_words(messages: Iterable[dict[str, Any]]) -> int:
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content.split())
        elif isinstance(content, list):
            total += sum(len(str(block.get("text", "")).split()) for block in content)
    return total


def last_user_text(messages: Iterable[dict[str, Any]]) -> str:
    for message in reversed(list(messages)):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


class StubServer:
    """A threaded HTTP server on 127.0.0.1 with a free port, run in a daemon thread.

    Subclasses implement `handle(handler, method, path, body)`. Requests are recorded under a
    lock because the server answers each request in its own thread.
    """

    # The URL prefix the client's base URL needs, e.g. "/v1" for OpenAI.
    base_path: ClassVar[str] = ""
    # The path a completion request ends with (`requests` and `completions` list those only).
    completion_path: ClassVar[str] = ""

    def __init__(self, replies: Iterable[StubReply] = ()) -> None:
        self._lock = threading.Lock()
        self._replies: deque[StubReply] = deque(replies)
        self._recorded: list[RecordedRequest] = []
        # A request whose tool_choice forces a tool is answered HTTP 400 (the reply is kept).
        self.refuse_forced_tool_choice = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            # A short poll interval keeps shutdown (and so each test) fast.
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}{self.base_path}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the completions asked for so far, oldest first (not the asks of
        the server's own endpoints, its window and tokenizer, that a provider makes once)."""
        return [recorded.body for recorded in self.completions]

    @property
    def completions(self) -> list[RecordedRequest]:
        """The completion requests received so far (`recorded` has every request)."""
        with self._lock:
            return [r for r in self._recorded if r.path.endswith(self.completion_path)]

    @property
    def tool_choices(self) -> list[Any]:
        """Each request's `tool_choice`, oldest first (None where it sent none)."""
        return [body.get("tool_choice") for body in self.requests]

    def refuses(self, body: dict[str, Any]) -> bool:
        """Whether this request forces a tool while the stub is told to refuse that."""
        choice = body.get("tool_choice")
        return self.refuse_forced_tool_choice and isinstance(choice, dict)

    @property
    def recorded(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._recorded)

    def queue(self, *replies: StubReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def next_reply(self) -> StubReply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        raise NotImplementedError

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._recorded.append(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - name fixed by http.server
                self._dispatch("GET", {})

            def do_POST(self) -> None:  # noqa: N802 - name fixed by http.server
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                self._dispatch("POST", json.loads(raw or b"{}"))

            def _dispatch(self, method: str, body: dict[str, Any]) -> None:
                path = self.path.split("?", 1)[0]
                headers = {name.lower(): value for name, value in self.headers.items()}
                stub._record(RecordedRequest(method, path, headers, body))
                stub.handle(self, method, path, body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                # Keep test output clean.
                return

        return Handler


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    # Tell the SDKs not to retry stub errors, so error tests do not wait through backoff.
    handler.send_header("x-should-retry", "false")
    handler.end_headers()
    handler.wfile.write(data)


def send_event_stream(handler: BaseHTTPRequestHandler, events: Iterable[str]) -> None:
    """Send server-sent events; the connection closes at the end (HTTP/1.0), ending the body."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()
    for event in events:
        handler.wfile.write(event.encode())
        handler.wfile.flush()


class OpenAIStubServer(StubServer):
    """`POST /v1/chat/completions` (streaming and not) and `GET /v1/models`."""

    base_path = "/v1"
    completion_path = "/v1/chat/completions"

    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        if method == "GET" and path == "/v1/models":
            model = {"id": STUB_MODEL, "object": "model", "created": 0, "owned_by": "stub"}
            send_json(handler, 200, {"object": "list", "data": [model]})
        elif method == "POST" and path == "/v1/chat/completions":
            self._complete(handler, body)
        else:
            send_json(handler, 404, {"error": {"message": f"no route {method} {path}"}})

    def _complete(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        messages = body.get("messages", [])
        if self.refuses(body):
            error = {"message": "tool_choice naming a function is not supported", "code": None}
            send_json(handler, 400, {"error": error | {"type": "invalid_request_error"}})
            return
        reply = self.next_reply() or StubReply(text=f"echo: {last_user_text(messages)}")
        if reply.status >= 400:
            error = {"message": reply.error_message, "type": "stub_error", "code": None}
            send_json(handler, reply.status, {"error": error})
            return
        prompt_tokens, completion_tokens = reply.usage or (
            count_words(messages),
            len(reply.text.split()),
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        model = body.get("model", STUB_MODEL)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            wants_usage = include_usage and not reply.omit_usage
            chunks = _completion_chunks(reply, model, usage if wants_usage else None)
            if reply.cut:
                chunks = itertools.takewhile(lambda chunk: not _finishes(chunk), chunks)
            events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
            send_event_stream(handler, [*events, *_stream_end(reply)])
        else:
            send_json(handler, 200, _completion(reply, model, usage))


def _finishes(chunk: dict[str, Any]) -> bool:
    return any(choice.get("finish_reason") for choice in chunk.get("choices", []))


def _stream_end(reply: StubReply) -> list[str]:
    if reply.cut == "close":
        return []
    if reply.cut == "error":
        # What llama.cpp's C++ server sends when the prompt outgrows its window mid-stream.
        error = {"message": reply.error_message, "type": "exceed_context_size_error", "code": 400}
        return [f"data: {json.dumps({'error': error})}\n\n"]
    return ["data: [DONE]\n\n"]


def _openai_tool_call(position: int, call: StubToolCall) -> dict[str, Any]:
    return {
        "index": position,
        "id": call.id or f"call_stub_{position}",
        "type": "function",
        "function": {"name": call.name, "arguments": ""},
    }


def _completion_chunks(
    reply: StubReply, model: str, usage: dict[str, int] | None
) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    yield chunk({"role": "assistant", "content": ""})
    for text in split_into_chunks(reply.text):
        yield chunk({"content": text})
    for position, call in enumerate(reply.tool_calls):
        # Like real servers: id and name first, then the arguments in fragments.
        yield chunk({"tool_calls": [_openai_tool_call(position, call)]})
        for fragment in split_in_three(call.arguments_json()):
            yield chunk({"tool_calls": [{"index": position, "function": {"arguments": fragment}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    if usage is not None:
        yield {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": usage,
        }


def _completion(reply: StubReply, model: str, usage: dict[str, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_stub_{position}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for position, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": usage,
    }
