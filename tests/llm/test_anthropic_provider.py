"""The Anthropic provider, driven through the real `anthropic` client against a local stub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import anthropic
import pytest

from tests.support.anthropic_stub import AnthropicStubServer
from tests.support.openai_stub import StubReply, StubToolCall, send_event_stream
from vancetope.llm.anthropic_provider import AnthropicProvider
from vancetope.llm.base import (
    CallInfo,
    ForcedToolRefused,
    IncompleteAnswer,
    LlmError,
    LlmMessage,
    TextDelta,
    ToolCall,
    ToolSchema,
    Usage,
    collect,
)

WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather of a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


@pytest.fixture
def stub() -> Iterator[AnthropicStubServer]:
    with AnthropicStubServer() as server:
        yield server


@pytest.fixture
def provider(stub: AnthropicStubServer) -> AnthropicProvider:
    return AnthropicProvider(
        api_key="test-key", base_url=stub.base_url, model="claude-test", max_tokens=300
    )


def test_streams_the_reply_as_several_text_deltas(provider: AnthropicProvider) -> None:
    # when
    items = list(provider.stream([LlmMessage(role="user", content="hello")]))

    # then
    deltas = [item.text for item in items if isinstance(item, TextDelta)]
    assert "".join(deltas) == "echo: hello"
    assert len(deltas) >= 2
    assert isinstance(items[-1], Usage)
    assert sum(isinstance(item, Usage) for item in items) == 1


def test_system_messages_go_to_the_system_parameter(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    # when
    collect(
        provider.stream(
            [
                LlmMessage(role="system", content="You are terse."),
                LlmMessage(role="system", content="Answer in French."),
                LlmMessage(role="user", content="hi"),
            ]
        )
    )

    # then
    [body] = stub.requests
    assert body["system"] == "You are terse.\n\nAnswer in French."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 300
    assert body["stream"] is True
    assert "tools" not in body


def test_a_call_that_asks_for_another_model_sends_that_model(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    # when a call names a model other than the configured one (a fallback)
    collect(provider.stream([LlmMessage(role="user", content="hi")], None, CallInfo(model="spare")))
    # then the request carries it, and the next call is back on the configured one
    collect(provider.stream([LlmMessage(role="user", content="hi")], None, CallInfo(step="x")))
    assert [body["model"] for body in stub.requests] == ["spare", "claude-test"]


def test_usage_comes_from_message_start_and_message_delta(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    # given: input tokens arrive in message_start, output tokens in message_delta
    stub.queue(StubReply(text="counted by the server", usage=(77, 9)))

    # when
    completion = collect(provider.stream([LlmMessage(role="user", content="hi")]))

    # then
    assert completion.text == "counted by the server"
    assert completion.usage == Usage(prompt_tokens=77, completion_tokens=9)


def test_a_message_delta_without_usage_keeps_the_message_start_counts(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    stub.queue(StubReply(text="x", usage=(5, 3), omit_usage=True))

    usage = collect(provider.stream([LlmMessage(role="user", content="hi")])).usage

    # The stub's message_start reports 1 output token, as the real API does.
    assert usage == Usage(prompt_tokens=5, completion_tokens=1)


def test_a_gateway_that_reports_no_usage_at_all_is_estimated(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    # given a stream with no usage in message_start nor in message_delta
    stub.queue(StubReply(text="twelve chars", omit_usage=True, omit_start_usage=True))

    usage = collect(provider.stream([LlmMessage(role="user", content="hi there")])).usage

    # then it is estimated: 8 characters + a message's markers; 12 characters
    assert usage == Usage(prompt_tokens=2 + 4, completion_tokens=3, estimated=True)


def test_a_forced_tool_is_sent_as_tool_choice_of_type_tool(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    # given
    stub.queue(StubReply(tool_calls=(StubToolCall("get_weather", {"city": "Oslo"}),)))

    # when one call forces get_weather and the next does not
    forced = collect(
        provider.stream(
            [LlmMessage(role="user", content="Oslo?")], [WEATHER], force_tool="get_weather"
        )
    )
    collect(provider.stream([LlmMessage(role="user", content="hi")], [WEATHER]))

    # then
    assert stub.tool_choices == [{"type": "tool", "name": "get_weather"}, None]
    assert forced.tool_calls[0].arguments == {"city": "Oslo"}


def test_an_api_that_refuses_a_forced_tool_is_a_forced_tool_refused_error(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    stub.refuse_forced_tool_choice = True
    with pytest.raises(ForcedToolRefused, match=r"refused tool_choice 'get_weather': HTTP 400"):
        collect(
            provider.stream(
                [LlmMessage(role="user", content="x")], [WEATHER], force_tool="get_weather"
            )
        )


def test_tool_use_round_trip(stub: AnthropicStubServer, provider: AnthropicProvider) -> None:
    # given: two tool_use blocks whose input arrives in input_json_delta fragments
    stub.queue(
        StubReply(
            text="Checking both.",
            tool_calls=(
                StubToolCall(name="get_weather", arguments={"city": "Paris"}, id="toolu_1"),
                StubToolCall(name="get_weather", arguments={"city": "Rome"}, id="toolu_2"),
            ),
        )
    )
    conversation = [LlmMessage(role="user", content="weather in Paris and Rome?")]

    # when: the model asks for the tools
    first = collect(provider.stream(conversation, tools=[WEATHER]))

    # then
    assert first.text == "Checking both."
    assert first.tool_calls == [
        ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="toolu_2", name="get_weather", arguments={"city": "Rome"}),
    ]
    assert stub.requests[0]["tools"] == [
        {
            "name": "get_weather",
            "description": WEATHER.description,
            "input_schema": WEATHER.parameters,
        }
    ]

    # when: both results go back
    conversation += [
        LlmMessage(role="assistant", content=first.text, tool_calls=tuple(first.tool_calls)),
        LlmMessage(role="tool", content="sunny", tool_call_id="toolu_1"),
        LlmMessage(role="tool", content="rainy", tool_call_id="toolu_2"),
    ]
    collect(provider.stream(conversation, tools=[WEATHER]))

    # then: one assistant turn with tool_use blocks, then ONE user turn with both results
    _, assistant, results = stub.requests[1]["messages"]
    paris = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    rome = {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}
    assert assistant == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Checking both."}, paris, rome],
    }
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "rainy"},
        ],
    }


def test_a_tool_use_without_input_deltas_has_empty_arguments(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    stub.queue(StubReply(tool_calls=(StubToolCall(name="now", arguments="", id="toolu_9"),)))

    completion = collect(provider.stream([LlmMessage(role="user", content="time?")]))

    assert completion.tool_calls == [ToolCall(id="toolu_9", name="now", arguments={})]


def test_invalid_tool_input_is_an_llm_error(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    stub.queue(StubReply(tool_calls=(StubToolCall(name="get_weather", arguments='{"city"'),)))

    with pytest.raises(LlmError, match="invalid JSON input for tool 'get_weather'"):
        collect(provider.stream([LlmMessage(role="user", content="go")]))


@pytest.mark.parametrize("status", [401, 500])
def test_a_server_error_is_an_llm_error_naming_status_and_server(
    stub: AnthropicStubServer, status: int
) -> None:
    # given: no retries, so the test does not wait through backoff
    provider = AnthropicProvider(api_key="test-key", base_url=stub.base_url, max_retries=0)
    stub.queue(StubReply(status=status, error_message="overloaded with feelings"))

    # when
    with pytest.raises(LlmError) as raised:
        collect(provider.stream([LlmMessage(role="user", content="hi")]))

    # then
    message = str(raised.value)
    assert f"HTTP {status}" in message
    assert stub.base_url in message
    assert "overloaded with feelings" in message
    assert isinstance(raised.value.__cause__, anthropic.APIStatusError)


def test_an_unreachable_server_is_an_llm_error() -> None:
    # given: a port that was free a moment ago and is closed now
    with AnthropicStubServer() as stub:
        base_url = stub.base_url
    provider = AnthropicProvider(api_key="k", base_url=base_url, max_retries=0, timeout=5)

    # when / then
    with pytest.raises(LlmError, match=f"cannot reach Anthropic API at {base_url}"):
        collect(provider.stream([LlmMessage(role="user", content="hi")]))


class BrokenStreamServer(AnthropicStubServer):
    """Answers every message with a stream that breaks off after the first text."""

    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        # Promise more than is sent, so closing the connection is a broken stream, not its end.
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        start = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": "partial"},
        }
        handler.wfile.write(f"event: content_block_start\ndata: {json.dumps(start)}\n\n".encode())


class MalformedEventServer(AnthropicStubServer):
    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        send_event_stream(handler, ["event: content_block_start\ndata: {not json\n\n"])


def test_a_stream_that_breaks_off_is_an_llm_error() -> None:
    with BrokenStreamServer() as stub:
        provider = AnthropicProvider(api_key="k", base_url=stub.base_url, max_retries=0)

        with pytest.raises(LlmError, match="broke off the stream"):
            collect(provider.stream([LlmMessage(role="user", content="hi")]))


def test_a_stream_that_ends_without_a_stop_reason_is_an_incomplete_answer(
    stub: AnthropicStubServer, provider: AnthropicProvider
) -> None:
    # given a server that ends its stream after the text, before it says why it stopped
    stub.queue(StubReply(text="half an answer", cut="close"))

    # when / then: the text that came is no answer
    with pytest.raises(IncompleteAnswer, match="without a stop reason after 14 characters"):
        collect(provider.stream([LlmMessage(role="user", content="hi")]))


def test_a_malformed_event_is_an_llm_error() -> None:
    with MalformedEventServer() as stub:
        provider = AnthropicProvider(api_key="k", base_url=stub.base_url, max_retries=0)

        with pytest.raises(LlmError, match="sent a malformed event"):
            collect(provider.stream([LlmMessage(role="user", content="hi")]))


def test_empty_turns_are_left_out(stub: AnthropicStubServer, provider: AnthropicProvider) -> None:
    collect(
        provider.stream(
            [
                LlmMessage(role="user", content="one"),
                LlmMessage(role="assistant", content=""),
                LlmMessage(role="user", content="two"),
            ]
        )
    )

    assert stub.requests[0]["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        }
    ]


def test_describe_names_the_server_and_the_model(provider: AnthropicProvider) -> None:
    assert provider.describe() == f"anthropic at {provider.base_url}, model claude-test"
    assert AnthropicProvider().describe().startswith("anthropic at https://api.anthropic.com")
