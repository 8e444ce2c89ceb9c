"""A local server for Anthropic's `POST /v1/messages`, so the real `anthropic` client is tested.

    with AnthropicStubServer() as stub:
        provider = AnthropicProvider(api_key="test-key", base_url=stub.base_url)

`base_url` has no `/v1`: the SDK adds it. Replies are the `StubReply`s of the OpenAI stub; by
default the answer is `echo: ` + the last user text, one word per `text_delta`, and tool calls
are `tool_use` blocks whose input arrives in several `input_json_delta` fragments.
`omit_usage` leaves usage out of `message_delta`, as some Anthropic-compatible gateways do;
`omit_start_usage` leaves it out of `message_start` too. `refuse_forced_tool_choice` answers a
request whose `tool_choice` forces a tool with HTTP 400.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.openai_stub import (
    StubReply,
    StubServer,
    count_words,
    last_user_text,
    send_event_stream,
    send_json,
    split_in_three,
    split_into_chunks,
)

STUB_MODEL = "claude-stub"


class AnthropicStubServer(StubServer):
    completion_path = "/v1/messages"

    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        if method == "POST" and path == "/v1/messages":
            self._messages(handler, body)
        else:
            error = {"type": "not_found_error", "message": f"no route {method} {path}"}
            send_json(handler, 404, {"type": "error", "error": error})

    def _messages(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        messages = body.get("messages", [])
        if self.refuses(body):
            error = {"type": "invalid_request_error", "message": "tool_choice is not supported"}
            send_json(handler, 400, {"type": "error", "error": error})
            return
        reply = self.next_reply() or StubReply(text=f"echo: {last_user_text(messages)}")
        if reply.status >= 400:
            error = {"type": "api_error", "message": reply.error_message}
            send_json(handler, reply.status, {"type": "error", "error": error})
            return
        input_tokens, output_tokens = reply.usage or (
            count_words(messages),
            len(reply.text.split()),
        )
        model = body.get("model", STUB_MODEL)
        if body.get("stream"):
            events = _message_events(reply, model, input_tokens, output_tokens)
            send_event_stream(
                handler, (f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
            )
        else:
            send_json(handler, 200, _message(reply, model, input_tokens, output_tokens))


def _message_events(
    reply: StubReply, model: str, input_tokens: int, output_tokens: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    stop_reason = "tool_use" if reply.tool_calls else "end_turn"
    start = _message(reply, model, input_tokens, 1) | {"content": [], "stop_reason": None}
    if reply.omit_start_usage:
        del start["usage"]
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    index = 0
    if reply.text:
        yield _block_start(index, {"type": "text", "text": ""})
        for text in split_into_chunks(reply.text):
            yield _block_delta(index, {"type": "text_delta", "text": text})
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    for position, call in enumerate(reply.tool_calls):
        block = {"type": "tool_use", "id": _tool_use_id(position, call.id), "name": call.name}
        yield _block_start(index, block | {"input": {}})
        for fragment in split_in_three(call.arguments_json()):
            yield _block_delta(index, {"type": "input_json_delta", "partial_json": fragment})
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    if reply.cut:
        return  # the stream ends before the message says why it stopped
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    message_delta = {"type": "message_delta", "delta": delta}
    if not reply.omit_usage:
        message_delta["usage"] = {"output_tokens": output_tokens}
    yield "message_delta", message_delta
    yield "message_stop", {"type": "message_stop"}


def _block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    event = {"type": "content_block_start", "index": index, "content_block": block}
    return "content_block_start", event


def _block_delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _tool_use_id(position: int, given: str) -> str:
    return given or f"toolu_stub_{position}"


def _message(reply: StubReply, model: str, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for position, call in enumerate(reply.tool_calls):
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        content.append(
            {
                "type": "tool_use",
                "id": _tool_use_id(position, call.id),
                "name": call.name,
                "input": arguments,
            }
        )
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
