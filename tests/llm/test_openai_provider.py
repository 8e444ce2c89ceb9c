"""The OpenAI-compatible provider, driven through the real `openai` client against a local stub."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from tests.support.openai_stub import (
    OpenAIStubServer,
    StubReply,
    StubToolCall,
    send_event_stream,
    send_json,
)
from vancetope.llm import server_probe
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
from vancetope.llm.openai_provider import OpenAICompatibleProvider
from vancetope.llm.server_probe import server_origin

READ_FILE = ToolSchema(
    name="read_file",
    description="Read a file of the working directory.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


@pytest.fixture
def stub() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as server:
        yield server


@pytest.fixture
def provider(stub: OpenAIStubServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(base_url=stub.base_url, model="local-model", max_tokens=256)


def test_streams_the_reply_as_several_text_deltas(provider: OpenAICompatibleProvider) -> None:
    # when
    items = list(provider.stream([LlmMessage(role="user", content="hello")]))

    # then
    deltas = [item.text for item in items if isinstance(item, TextDelta)]
    assert "".join(deltas) == "echo: hello"
    assert len(deltas) >= 2
    assert isinstance(items[-1], Usage)
    assert sum(isinstance(item, Usage) for item in items) == 1


def test_request_carries_model_messages_limits_and_asks_for_usage(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # when
    collect(
        provider.stream(
            [LlmMessage(role="system", content="be brief"), LlmMessage(role="user", content="hi")]
        )
    )

    # then
    [body] = stub.requests
    assert body["model"] == "local-model"
    assert body["max_tokens"] == 256
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert "tools" not in body


def test_a_call_that_asks_for_another_model_sends_that_model(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # when a call names a model other than the configured one (a fallback)
    collect(provider.stream([LlmMessage(role="user", content="hi")], None, CallInfo(model="spare")))
    # then the request carries it, and the next call is back on the configured one
    collect(provider.stream([LlmMessage(role="user", content="hi")], None, CallInfo(step="x")))
    assert [body["model"] for body in stub.requests] == ["spare", "local-model"]


def test_a_call_whose_budget_sets_max_tokens_sends_those(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # when a call's context budget leaves the answer fewer tokens than configured
    collect(provider.stream([LlmMessage(role="user", content="hi")], info=CallInfo(max_tokens=64)))

    # then the request asks for those
    assert stub.requests[0]["max_tokens"] == 64


def test_api_key_defaults_to_a_placeholder_for_local_servers(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    collect(provider.stream([LlmMessage(role="user", content="hi")]))

    assert stub.recorded[0].headers["authorization"] == "Bearer not-needed"


def test_usage_is_taken_from_the_server(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # given
    stub.queue(StubReply(text="counted by the server", usage=(123, 45)))

    # when
    completion = collect(provider.stream([LlmMessage(role="user", content="hi")]))

    # then
    assert completion.text == "counted by the server"
    assert completion.usage == Usage(prompt_tokens=123, completion_tokens=45)


def test_a_server_without_usage_ends_with_one_estimated_usage(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # given a server that sends no usage (as llama.cpp's server does in a stream)
    stub.queue(StubReply(text="no usage here, twenty-eight chars", omit_usage=True))

    # when
    items = list(provider.stream([LlmMessage(role="user", content="hi there")]))

    # then one Usage, estimated at about four characters a token plus the message's markers
    [usage] = [item for item in items if isinstance(item, Usage)]
    assert items[-1] is usage
    assert usage.estimated is True
    assert usage.prompt_tokens == 2 + 4  # "hi there": 8 characters, 1 message
    assert usage.completion_tokens == 9  # 33 characters


def test_a_server_with_usage_is_not_estimated(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    stub.queue(StubReply(text="counted", usage=(7, 1)))
    items = list(provider.stream([LlmMessage(role="user", content="hi")]))
    assert items[-1] == Usage(prompt_tokens=7, completion_tokens=1, estimated=False)


def test_a_forced_tool_is_sent_as_tool_choice_naming_the_function(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # given
    stub.queue(StubReply(tool_calls=(StubToolCall("read_file", {"path": "a.md"}),)))

    # when the call forces read_file, and a second call does not
    forced = collect(
        provider.stream(
            [LlmMessage(role="user", content="read a.md")], [READ_FILE], force_tool="read_file"
        )
    )
    collect(provider.stream([LlmMessage(role="user", content="hi")], [READ_FILE]))

    # then the first request named the function, the second left the choice to the model
    assert stub.tool_choices == [{"type": "function", "function": {"name": "read_file"}}, None]
    assert [call.name for call in forced.tool_calls] == ["read_file"]


def test_a_server_that_refuses_a_forced_tool_is_a_forced_tool_refused_error(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # given a server that does not take tool_choice naming a function
    stub.refuse_forced_tool_choice = True

    # when / then
    with pytest.raises(ForcedToolRefused, match=r"refused tool_choice 'read_file': HTTP 400"):
        collect(
            provider.stream(
                [LlmMessage(role="user", content="x")], [READ_FILE], force_tool="read_file"
            )
        )
    # and an unforced call to it is answered as always
    assert collect(provider.stream([LlmMessage(role="user", content="x")], [READ_FILE])).text


def test_tool_call_round_trip(stub: OpenAIStubServer, provider: OpenAICompatibleProvider) -> None:
    # given: the stub streams the call's arguments in several fragments
    arguments = {"path": "notes/today.md", "lines": [1, 20]}
    stub.queue(
        StubReply(
            text="Let me look.",
            tool_calls=(StubToolCall(name="read_file", arguments=arguments, id="call_abc"),),
        )
    )
    conversation = [LlmMessage(role="user", content="what is in my notes?")]

    # when: the model asks for the tool
    first = collect(provider.stream(conversation, tools=[READ_FILE]))

    # then
    assert first.text == "Let me look."
    assert first.tool_calls == [ToolCall(id="call_abc", name="read_file", arguments=arguments)]
    assert stub.requests[0]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": READ_FILE.description,
                "parameters": READ_FILE.parameters,
            },
        }
    ]

    # when: the tool result goes back
    conversation += [
        LlmMessage(role="assistant", content=first.text, tool_calls=tuple(first.tool_calls)),
        LlmMessage(role="tool", content="buy milk", tool_call_id="call_abc"),
    ]
    collect(provider.stream(conversation, tools=[READ_FILE]))

    # then: the server saw the assistant call and the tool message answering it
    assistant, tool = stub.requests[1]["messages"][1:]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == "Let me look."
    [sent_call] = assistant["tool_calls"]
    assert sent_call["id"] == "call_abc"
    assert sent_call["function"]["name"] == "read_file"
    assert json.loads(sent_call["function"]["arguments"]) == arguments
    assert tool == {"role": "tool", "tool_call_id": "call_abc", "content": "buy milk"}


def test_an_assistant_turn_of_only_tool_calls_sends_empty_not_null_content(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    call = ToolCall(id="call_1", name="read_file", arguments={})
    collect(
        provider.stream(
            [
                LlmMessage(role="user", content="go"),
                LlmMessage(role="assistant", tool_calls=(call,)),
                LlmMessage(role="tool", content="done", tool_call_id="call_1"),
            ]
        )
    )

    # llama.cpp's server answers HTTP 500 to a null content
    assert stub.requests[0]["messages"][1]["content"] == ""


def test_several_tool_calls_keep_their_order_and_get_ids_when_the_server_gives_none(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # given
    stub.queue(
        StubReply(
            tool_calls=(
                StubToolCall(name="first", arguments={"n": 1}),
                StubToolCall(name="second", arguments={}),
            )
        )
    )

    # when
    calls = collect(provider.stream([LlmMessage(role="user", content="go")])).tool_calls

    # then
    assert [(call.name, call.arguments) for call in calls] == [("first", {"n": 1}), ("second", {})]
    assert calls[0].id != calls[1].id


def test_invalid_tool_arguments_are_an_llm_error(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    stub.queue(StubReply(tool_calls=(StubToolCall(name="read_file", arguments='{"path": '),)))

    with pytest.raises(LlmError, match="invalid JSON arguments for tool 'read_file'"):
        collect(provider.stream([LlmMessage(role="user", content="go")]))


@pytest.mark.parametrize("status", [401, 500])
def test_a_server_error_is_an_llm_error_naming_status_and_server(
    stub: OpenAIStubServer, status: int
) -> None:
    # given: no retries, so the test does not wait through backoff
    provider = OpenAICompatibleProvider(base_url=stub.base_url, max_retries=0)
    stub.queue(StubReply(status=status, error_message="model is on fire"))

    # when
    with pytest.raises(LlmError) as raised:
        collect(provider.stream([LlmMessage(role="user", content="hi")]))

    # then
    message = str(raised.value)
    assert f"HTTP {status}" in message
    assert stub.base_url in message
    assert "model is on fire" in message
    assert isinstance(raised.value.__cause__, openai.APIStatusError)


def test_an_unreachable_server_is_an_llm_error() -> None:
    # given: a port that was free a moment ago and is closed now
    with OpenAIStubServer() as stub:
        base_url = stub.base_url
    provider = OpenAICompatibleProvider(base_url=base_url, max_retries=0, timeout=5)

    # when / then
    with pytest.raises(LlmError, match=f"connection to OpenAI-compatible server at {base_url}"):
        collect(provider.stream([LlmMessage(role="user", content="hi")]))


def bodies(stub: OpenAIStubServer) -> list[dict[str, Any]]:
    """Every request's body, the asks of the server's own endpoints too (`requests` has the
    completions only)."""
    return [recorded.body for recorded in stub.recorded]


class BrokenStreamServer(OpenAIStubServer):
    """Answers every completion with a stream that breaks off after one chunk."""

    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        # Promise more than is sent, so closing the connection is a broken stream, not its end.
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        chunk = {
            "id": "chatcmpl-broken",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "partial"}, "finish_reason": None}],
        }
        handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())


class MalformedEventServer(OpenAIStubServer):
    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        send_event_stream(handler, ["data: {not json\n\n"])


def test_a_stream_that_breaks_off_is_an_llm_error() -> None:
    with BrokenStreamServer() as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url, max_retries=0)

        with pytest.raises(LlmError, match="connection to OpenAI-compatible server"):
            collect(provider.stream([LlmMessage(role="user", content="hi")]))


@pytest.mark.parametrize(
    ("cut", "sent"),
    [
        ("close", "the body ends after the text"),
        ("done", "[DONE] follows the text"),
    ],
)
def test_a_stream_cut_before_its_finish_reason_is_an_incomplete_answer(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider, cut: Any, sent: str
) -> None:
    # given a server that cuts its stream before the finish reason (llama.cpp's server does:
    # on a prompt over its window after the first chunk, and on an interrupted request)
    stub.queue(StubReply(text="half an answer", cut=cut))

    # when / then: what came is no answer, however the stream ended
    with pytest.raises(IncompleteAnswer, match="without a finish reason after 14 characters"):
        collect(provider.stream([LlmMessage(role="user", content="hi")]))


def test_an_error_event_in_the_stream_is_an_llm_error_with_the_servers_message(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # given a server that reports an error after its stream began (status 200 already sent)
    message = "the request exceeds the available context size"
    stub.queue(StubReply(text="so", cut="error", error_message=message))

    # when / then
    with pytest.raises(LlmError, match=message):
        collect(provider.stream([LlmMessage(role="user", content="hi")]))


def test_a_malformed_event_is_an_llm_error() -> None:
    with MalformedEventServer() as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url, max_retries=0)

        with pytest.raises(LlmError, match="sent a malformed event"):
            collect(provider.stream([LlmMessage(role="user", content="hi")]))


def test_describe_names_the_server_and_the_model(provider: OpenAICompatibleProvider) -> None:
    assert provider.describe() == f"openai-compatible at {provider.base_url}, model local-model"


def test_defaults_are_openai_itself() -> None:
    provider = OpenAICompatibleProvider()

    assert provider.base_url == "https://api.openai.com/v1"
    assert provider.model == "gpt-4o-mini"


def test_stub_also_serves_models_and_non_streaming_completions(stub: OpenAIStubServer) -> None:
    # given
    client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
    stub.queue(StubReply(text="plain", tool_calls=(StubToolCall(name="t", arguments={"a": 1}),)))

    # when
    models = client.models.list()
    completion = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )

    # then
    assert [model.id for model in models] == ["stub-model"]
    message = completion.choices[0].message
    assert message.content == "plain"
    assert message.tool_calls is not None
    [call] = message.tool_calls
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert json.loads(call.function.arguments) == {"a": 1}


class CountingStub(OpenAIStubServer):
    """The stub, answering slowly and counting the requests it serves at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_at_once = 0
        self._count_lock = threading.Lock()

    def handle(self, *args: Any, **kwargs: Any) -> None:
        with self._count_lock:
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
        time.sleep(0.2)
        try:
            super().handle(*args, **kwargs)
        finally:
            with self._count_lock:
                self.in_flight -= 1


def test_a_concurrency_bound_queues_calls_to_one_server() -> None:
    # given a slow server, and three providers of its URL bounded to one call at a time
    with CountingStub() as stub:
        providers = [
            OpenAICompatibleProvider(base_url=stub.base_url, max_concurrent=1) for _ in range(3)
        ]
        # when three threads call at once
        threads = [
            threading.Thread(
                target=lambda p=p: collect(p.stream([LlmMessage(role="user", content="hi")]))
            )
            for p in providers
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    # then the server never had two at once, and all three were answered
    assert stub.most_at_once == 1
    assert len(stub.requests) == 3


def test_a_raw_newline_inside_a_tool_arguments_string_is_read_not_refused() -> None:
    # given a server whose model wrote a newline inside a JSON string, unescaped
    with OpenAIStubServer() as stub:
        stub.queue(StubReply(tool_calls=(StubToolCall("note", '{"text": "one\ntwo"}'),)))
        provider = OpenAICompatibleProvider(base_url=stub.base_url)
        # when the call is read
        completion = collect(provider.stream([LlmMessage(role="user", content="hi")]))
    # then the arguments hold the newline as the character it is
    assert [call.arguments for call in completion.tool_calls] == [{"text": "one\ntwo"}]


class SelfDescribingStub(OpenAIStubServer):
    """The stub, also answering where local servers say their window and count tokens, each
    only when given: llama.cpp's `/props`, Ollama's `/api/show`, and the tokenize endpoint of
    llama.cpp's servers (`tokenizer`: "llama.cpp" for `/tokenize`, "llama-cpp-python" for
    `/extras/tokenize/count`). A token is a word. The first `loading` requests of these are
    answered 503, as llama.cpp's server answers while it loads its model."""

    def __init__(
        self,
        *,
        props: dict[str, Any] | None = None,
        show: dict[str, Any] | None = None,
        tokenizer: str = "",
        loading: int = 0,
    ) -> None:
        super().__init__()
        self.props = props
        self.show = show
        self.tokenizer = tokenizer
        self.loading = loading
        self._loading_lock = threading.Lock()

    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        if path in {"/props", "/api/show", "/tokenize", "/extras/tokenize/count"}:
            with self._loading_lock:
                loading, self.loading = self.loading > 0, max(self.loading - 1, 0)
            if loading:
                send_json(handler, 503, {"error": {"message": "Loading model", "code": 503}})
                return
        if method == "GET" and path == "/props" and self.props is not None:
            send_json(handler, 200, self.props)
        elif method == "POST" and path == "/api/show" and self.show is not None:
            send_json(handler, 200, self.show)
        elif method == "POST" and path == "/tokenize" and self.tokenizer == "llama.cpp":
            send_json(handler, 200, {"tokens": list(range(len(body["content"].split())))})
        elif (
            method == "POST"
            and path == "/extras/tokenize/count"
            and self.tokenizer == "llama-cpp-python"
        ):
            send_json(handler, 200, {"count": len(body["input"].split())})
        else:
            super().handle(handler, method, path, body)

    def paths(self) -> list[str]:
        return [request.path for request in self.recorded]


@pytest.mark.parametrize(
    "props",
    [
        {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1},
        # older builds of llama.cpp's server
        {"n_ctx": 8192},
    ],
)
def test_the_context_window_is_what_llama_cpps_server_says_in_props(
    props: dict[str, Any],
) -> None:
    # given
    with SelfDescribingStub(props=props) as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url, api_key="secret")

        # when
        window = provider.context_window()

        # then
        assert window == 8192
        [request] = stub.recorded
        assert (request.method, request.path) == ("GET", "/props")
        assert request.headers["authorization"] == "Bearer secret"


@pytest.mark.parametrize(
    ("parameters", "trained", "window"),
    [
        ('num_ctx                        8192\nstop "<|im_end|>"', 131072, 8192),
        # Ollama cuts a num_ctx beyond what the model was trained for
        ("num_ctx 65536", 32768, 32768),
        # without num_ctx: Ollama's default window, or the trained one where that is smaller
        ('stop "<|im_end|>"', 131072, 4096),
        ("", 2048, 2048),
    ],
    ids=["num_ctx", "num_ctx-beyond-training", "ollamas-default", "trained-below-default"],
)
def test_the_context_window_is_what_ollama_runs_the_model_with(
    parameters: str, trained: int, window: int
) -> None:
    # given an Ollama server (no /props), its model's parameters and trained length
    show = {
        "parameters": parameters,
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": trained},
    }
    with SelfDescribingStub(show=show) as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url, model="qwen2.5:7b")

        # when
        answer = provider.context_window()

        # then
        assert answer == window
        assert stub.paths() == ["/props", "/api/show"]
        assert bodies(stub)[-1] == {"model": "qwen2.5:7b"}


def test_a_server_that_does_not_say_its_window_is_asked_once_per_model(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # when the window is asked for twice, from two threads, and for another model
    windows: list[int | None] = []
    threads = [threading.Thread(target=lambda: windows.append(provider.context_window()))]
    threads += [threading.Thread(target=lambda: windows.append(provider.context_window("")))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other = provider.context_window("other-model")

    # then the server was asked once for each model, and said nothing
    assert windows == [None, None]
    assert other is None
    assert [request.path for request in stub.recorded] == ["/props", "/api/show"] * 2
    assert [body.get("model") for body in bodies(stub)[1::2]] == ["local-model", "other-model"]


def test_a_server_without_its_window_says_none_to_malformed_answers_too() -> None:
    # given a /props without n_ctx and an /api/show without any length
    show = {"parameters": "num_ctx lots", "model_info": {"general.architecture": "llama"}}
    with SelfDescribingStub(props={"total_slots": 1}, show=show) as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url)

        # when / then
        assert provider.context_window() is None


def test_an_unreachable_server_has_no_window_and_no_count() -> None:
    # given a port that was free a moment ago and is closed now
    with OpenAIStubServer() as stub:
        base_url = stub.base_url
    provider = OpenAICompatibleProvider(base_url=base_url)

    # when / then: nothing is raised
    assert provider.context_window() is None
    assert provider.count_tokens("hello there") is None


def test_a_server_still_loading_its_model_is_asked_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given llama.cpp's server answering 503 while it loads, and no pause between retries
    monkeypatch.setattr(server_probe, "RETRY_AFTER", 0.0)
    with SelfDescribingStub(props={"n_ctx": 4096}, tokenizer="llama.cpp", loading=2) as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url)

        # when
        first_window, first_count = provider.context_window(), provider.count_tokens("a b")

        # then "not yet" was not remembered as "no"
        assert (first_window, first_count) == (None, None)
        assert provider.context_window() == 4096
        assert provider.count_tokens("a b") == 2


def test_after_a_server_could_not_answer_it_is_left_alone_a_while() -> None:
    # given a server that answered 503
    with SelfDescribingStub(props={"n_ctx": 4096}, loading=1) as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url)
        assert provider.context_window() is None

        # when asked again at once
        window = provider.context_window()
        count = provider.count_tokens("a b")

        # then the answer is None without a request
        assert (window, count) == (None, None)
        assert stub.paths() == ["/props"]


@pytest.mark.parametrize(
    ("tokenizer", "path", "body"),
    [
        ("llama.cpp", "/tokenize", {"content": "one two three"}),
        ("llama-cpp-python", "/extras/tokenize/count", {"input": "one two three"}),
    ],
)
def test_tokens_are_counted_by_the_servers_tokenizer(
    tokenizer: str, path: str, body: dict[str, Any]
) -> None:
    # given
    with SelfDescribingStub(tokenizer=tokenizer) as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url, api_key="secret")

        # when
        count = provider.count_tokens("one two three")
        later = provider.count_tokens("four five")

        # then the endpoint found first is the one asked later
        assert (count, later) == (3, 2)
        assert stub.recorded[-1].path == path
        assert stub.recorded[-1].headers["authorization"] == "Bearer secret"
        assert bodies(stub)[-2] == body
        assert stub.paths().count(path) == 2


def test_a_server_without_a_tokenizer_counts_nothing_and_is_asked_once(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # when
    counts = [provider.count_tokens("one two"), provider.count_tokens("three")]

    # then
    assert counts == [None, None]
    assert [request.path for request in stub.recorded] == ["/tokenize", "/extras/tokenize/count"]


def test_each_text_is_counted_once() -> None:
    # given
    with SelfDescribingStub(tokenizer="llama.cpp") as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url)

        # when
        counts = [provider.count_tokens(text) for text in ["a b", "c", "a b", "c", "a b"]]

        # then
        assert counts == [2, 1, 2, 1, 2]
        assert [body["content"] for body in bodies(stub)] == ["a b", "c"]


def test_the_count_longest_unused_is_forgotten_past_the_caches_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a cache of two counts
    monkeypatch.setattr(server_probe, "COUNT_CACHE_SIZE", 2)
    with SelfDescribingStub(tokenizer="llama.cpp") as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url)
        for text in ["a", "b", "a", "c"]:
            provider.count_tokens(text)

        # when the two kept ("a" used again, "c") and the forgotten one ("b") are counted
        for text in ["a", "c", "b"]:
            provider.count_tokens(text)

        # then only the forgotten one is asked for again
        assert [body["content"] for body in bodies(stub)] == ["a", "b", "c", "b"]


@pytest.mark.parametrize(
    ("base_url", "origin"),
    [
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("http://localhost:11434/v1/", "http://localhost:11434"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_a_servers_own_endpoints_are_beside_its_v1(base_url: str, origin: str) -> None:
    assert server_origin(base_url) == origin


def test_the_operators_org_and_project_ids_go_only_to_the_operators_url(
    stub: OpenAIStubServer, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    # given the operator's identifiers in the environment, as the openai SDK reads them
    monkeypatch.setenv("OPENAI_ORG_ID", "org-operator")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-operator")
    hello = [LlmMessage(role="user", content="hello")]
    # when a provider calls a URL a tenant's llm.baseUrl names (not the operator's)
    settings.OPENAI_BASE_URL = "http://operator.invalid/v1"
    collect(OpenAICompatibleProvider(base_url=stub.base_url, model="m").stream(hello))
    # and one calls the operator's own URL
    settings.OPENAI_BASE_URL = stub.base_url
    collect(OpenAICompatibleProvider(base_url=stub.base_url, model="m").stream(hello))
    # then only the second carried them (before: both, 29 of 29 in the probe)
    tenants, operators = [request.headers for request in stub.completions]
    assert "openai-organization" not in tenants
    assert "openai-project" not in tenants
    assert (operators["openai-organization"], operators["openai-project"]) == (
        "org-operator",
        "proj-operator",
    )


def test_entities_a_server_escaped_into_the_prompt_are_decoded_in_the_calls_arguments(
    stub: OpenAIStubServer, provider: OpenAICompatibleProvider
) -> None:
    # given a model that copied the HTML references llama-cpp-python's server put in its
    # prompt (Jinja's autoescape) into its call's arguments
    escaped = {"title": "Compare &#34;A&#34; &lt;b&gt;", "tags": ["x &amp; y"], "n": 2}
    stub.queue(StubReply(tool_calls=(StubToolCall("plan", escaped),)))
    stub.queue(StubReply(tool_calls=(StubToolCall("plan", escaped),)))
    # when what it was sent held none of them, and when it did (a person writing about HTML)
    plain = list(provider.stream([LlmMessage(role="user", content='Compare "A" <b>')]))
    about_html = list(provider.stream([LlmMessage(role="user", content="what is &lt;?")]))
    # then the first call's texts are as the person wrote them; the second is left as it came
    [first] = [item for item in plain if isinstance(item, ToolCall)]
    assert first.arguments == {"title": 'Compare "A" <b>', "tags": ["x & y"], "n": 2}
    [second] = [item for item in about_html if isinstance(item, ToolCall)]
    assert second.arguments == escaped
