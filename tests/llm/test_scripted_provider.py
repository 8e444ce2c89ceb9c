from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from vancetope.llm import scripted
from vancetope.llm.base import (
    CallInfo,
    LlmError,
    LlmMessage,
    TextDelta,
    ToolCall,
    Usage,
    collect,
)
from vancetope.llm.scripted import ScriptedProvider


def user(text: str) -> LlmMessage:
    return LlmMessage(role="user", content=text)


def system(text: str) -> LlmMessage:
    return LlmMessage(role="system", content=text)


def reply_text(provider: ScriptedProvider, messages: list[LlmMessage]) -> str:
    return collect(provider.stream(messages)).text


def test_without_script_it_echoes_the_last_user_message() -> None:
    # given
    provider = ScriptedProvider()
    messages = [user("first"), LlmMessage(role="assistant", content="ok"), user("hello")]

    # when
    completion = collect(provider.stream(messages))

    # then
    assert completion.text == "echo: hello"
    assert completion.tool_calls == []


def test_echo_of_a_conversation_without_user_message_is_empty() -> None:
    assert reply_text(ScriptedProvider(), [system("be brief")]) == "echo: "


def test_echo_streams_one_delta_per_word() -> None:
    # when
    items = list(ScriptedProvider().stream([user("hello")]))

    # then
    assert items[:-1] == [TextDelta("echo: "), TextDelta("hello")]
    assert isinstance(items[-1], Usage)


@pytest.mark.parametrize(
    "reply",
    ["one", "two  words", "  leading and trailing  ", "lines\nand\ttabs\n", "   ", ""],
)
def test_deltas_join_back_to_the_reply_exactly(reply: str) -> None:
    # given
    provider = ScriptedProvider([{"reply": reply}])

    # when
    deltas = [item.text for item in provider.stream([user("x")]) if isinstance(item, TextDelta)]

    # then
    assert "".join(deltas) == reply
    assert len(deltas) == max(len(reply.split()), 1 if reply else 0)


def test_rules_are_tried_in_order_and_the_first_match_answers() -> None:
    # given
    provider = ScriptedProvider(
        [
            {"match": "weather", "reply": "sunny"},
            {"match": "weather|news", "reply": "headlines"},
            {"reply": "anything else"},
        ]
    )

    # then
    assert reply_text(provider, [user("what is the weather")]) == "sunny"
    assert reply_text(provider, [user("any news?")]) == "headlines"
    assert reply_text(provider, [user("hi")]) == "anything else"


def test_match_looks_only_at_the_last_user_message() -> None:
    # given
    provider = ScriptedProvider([{"match": "^plan", "reply": "planning"}])
    messages = [user("plan the trip"), LlmMessage(role="assistant", content="ok"), user("go")]

    # then
    assert reply_text(provider, messages) == "echo: go"


def test_no_matching_rule_falls_back_to_the_echo() -> None:
    provider = ScriptedProvider([{"match": "never", "reply": "nope"}])

    assert reply_text(provider, [user("hello")]) == "echo: hello"


def test_system_prefix_matches_the_system_prompt_not_the_user_message() -> None:
    # given
    provider = ScriptedProvider(
        [
            {"match": "system: you are a (planner|critic)", "reply": "role reply"},
            {"match": "planner", "reply": "user reply"},
        ]
    )

    # then
    with_system = [system("Note: "), system("you are a critic"), user("planner?")]
    assert reply_text(provider, with_system) == "role reply"
    assert reply_text(provider, [user("planner?")]) == "user reply"


def test_rule_with_times_stops_firing_after_its_count() -> None:
    # given
    provider = ScriptedProvider([{"reply": "first two", "times": 2}, {"reply": "later"}])

    # when
    replies = [reply_text(provider, [user("x")]) for _ in range(4)]

    # then
    assert replies == ["first two", "first two", "later", "later"]


def test_times_counts_per_provider_instance() -> None:
    script = [{"reply": "once", "times": 1}]
    first, second = ScriptedProvider(script), ScriptedProvider(script)

    assert reply_text(first, [user("x")]) == "once"
    assert reply_text(first, [user("x")]) == "echo: x"
    assert reply_text(second, [user("x")]) == "once"


def test_times_is_exact_when_many_threads_call_at_once() -> None:
    # given
    provider = ScriptedProvider([{"reply": "limited", "times": 5}])
    replies: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        text = reply_text(provider, [user("x")])
        with lock:
            replies.append(text)

    # when
    threads = [threading.Thread(target=call) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # then
    assert replies.count("limited") == 5
    assert replies.count("echo: x") == 15


def test_tool_calls_follow_the_text_with_sequential_ids() -> None:
    # given
    provider = ScriptedProvider(
        [
            {
                "match": "read",
                "reply": "Reading now.",
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "a.txt"}},
                    {"name": "list_dir"},
                ],
            }
        ]
    )

    # when
    first = list(provider.stream([user("read it")]))
    second = collect(provider.stream([user("read again")]))

    # then
    assert first[:2] == [TextDelta("Reading "), TextDelta("now.")]
    assert first[2:4] == [
        ToolCall(id="call_1", name="read_file", arguments={"path": "a.txt"}),
        ToolCall(id="call_2", name="list_dir", arguments={}),
    ]
    assert isinstance(first[4], Usage)
    assert [call.id for call in second.tool_calls] == ["call_3", "call_4"]


def test_a_rule_may_answer_with_tool_calls_only() -> None:
    provider = ScriptedProvider([{"tool_calls": [{"name": "now", "arguments": {}}]}])

    completion = collect(provider.stream([user("time?")]))

    assert completion.text == ""
    assert completion.tool_calls == [ToolCall(id="call_1", name="now", arguments={})]


def test_usage_counts_words_of_all_input_messages_and_of_the_reply() -> None:
    # given
    messages = [system("you are terse"), user("say hello to me"), user("now")]

    # when
    items = list(ScriptedProvider().stream(messages))

    # then
    assert items[-1] == Usage(prompt_tokens=3 + 4 + 1, completion_tokens=2)
    assert sum(isinstance(item, Usage) for item in items) == 1


def test_usage_counts_tool_call_name_and_json_arguments_as_words() -> None:
    # given: json.dumps gives '{"path": "a.txt", "n": 2}', four words
    read = {"name": "read", "arguments": {"path": "a.txt", "n": 2}}
    provider = ScriptedProvider([{"reply": "ok then", "tool_calls": [read]}])

    # when
    usage = collect(provider.stream([user("go")])).usage

    # then
    assert usage == Usage(prompt_tokens=1, completion_tokens=2 + 1 + 4)


def test_script_is_loaded_from_a_yaml_file(tmp_path: Path) -> None:
    # given
    path = tmp_path / "script.yaml"
    path.write_text(
        "- match: 'system: planner'\n"
        "  reply: step one\n"
        "- match: weather\n"
        "  tool_calls:\n"
        "    - name: get_weather\n"
        "      arguments: {city: Paris}\n"
    )

    # when
    provider = ScriptedProvider(path)

    # then
    assert reply_text(provider, [system("you are a planner"), user("hi")]) == "step one"
    assert collect(provider.stream([user("weather?")])).tool_calls == [
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    ]
    assert str(path) in provider.describe()


def test_model_is_scripted_unless_configured() -> None:
    assert ScriptedProvider().model == "scripted"
    assert ScriptedProvider(model="fake-large").model == "fake-large"
    assert "offline" in ScriptedProvider().describe()


def test_delays_sleep_before_the_first_delta_and_between_deltas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given: sleeping is recorded instead of done, so the test stays fast
    events: list[Any] = []
    monkeypatch.setattr(scripted.time, "sleep", lambda seconds: events.append(("sleep", seconds)))
    provider = ScriptedProvider([{"reply": "slow reply", "delay": 0.5}], delay_per_delta=0.1)

    # when
    for item in provider.stream([user("x")]):
        events.append(item)

    # then
    assert events[:5] == [
        ("sleep", 0.5),
        ("sleep", 0.1),
        TextDelta("slow "),
        ("sleep", 0.1),
        TextDelta("reply"),
    ]


def test_rule_delay_per_delta_replaces_the_providers_for_that_rule_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given: sleeping is recorded instead of done, so the test stays fast
    events: list[Any] = []
    monkeypatch.setattr(scripted.time, "sleep", lambda seconds: events.append(("sleep", seconds)))
    provider = ScriptedProvider(
        [
            {"match": "story", "reply": "once upon", "delay_per_delta": 0.25},
            {"match": "quick", "reply": "at once", "delay_per_delta": 0},
            {"match": "plain", "reply": "as usual"},
        ],
        delay_per_delta=0.1,
    )

    def stream(text: str) -> list[Any]:
        events.clear()
        for item in provider.stream([user(text)]):
            if not isinstance(item, Usage):
                events.append(item)
        return list(events)

    # then: the rule's own delay, none at all, or the provider's
    assert stream("a story") == [
        ("sleep", 0.25),
        TextDelta("once "),
        ("sleep", 0.25),
        TextDelta("upon"),
    ]
    assert stream("quick one") == [TextDelta("at "), TextDelta("once")]
    assert stream("plain") == [("sleep", 0.1), TextDelta("as "), ("sleep", 0.1), TextDelta("usual")]
    assert stream("echo") == [
        ("sleep", 0.1),
        TextDelta("echo: "),
        ("sleep", 0.1),
        TextDelta("echo"),
    ]


def test_rule_delay_per_delta_is_read_from_a_yaml_script(tmp_path: Path) -> None:
    path = tmp_path / "slow.yaml"
    path.write_text("- reply: slow words\n  delay_per_delta: 0.005\n")

    (rule,) = ScriptedProvider(path).rules

    assert rule.delay_per_delta == 0.005
    assert ScriptedProvider([{"reply": "x"}]).rules[0].delay_per_delta is None


def test_rule_is_chosen_when_the_call_is_made_not_when_it_is_read() -> None:
    # given
    provider = ScriptedProvider([{"reply": "first", "times": 1}])

    # when: the first stream is read only after the second call was made
    pending = provider.stream([user("a")])
    second = reply_text(provider, [user("b")])

    # then
    assert collect(pending).text == "first"
    assert second == "echo: b"


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"reply": "x"}, r"must be a list of rules, got dict"),
        (["just text"], r"rule 0: must be a mapping, got str"),
        ([{"reply": "ok"}, {"match": "(", "reply": "x"}], r"rule 1: `match` is not a valid"),
        ([{"match": "system: [", "reply": "x"}], r"rule 0: `match` is not a valid"),
        ([{"reply": "x", "replies": "y"}], r"rule 0: unknown keys \['replies'\]"),
        ([{"match": "x"}], r"rule 0: needs a `reply` and/or `tool_calls`"),
        ([{"reply": 3}], r"rule 0: `reply` must be a string"),
        ([{"match": 5, "reply": "x"}], r"rule 0: `match` must be a string"),
        ([{"reply": "x", "times": 0}], r"rule 0: `times` must be a positive integer"),
        ([{"reply": "x", "times": True}], r"rule 0: `times` must be a positive integer"),
        ([{"reply": "x", "delay": -1}], r"rule 0: `delay` must be a non-negative number"),
        ([{"reply": "x", "delay_per_delta": -0.1}], r"rule 0: `delay_per_delta` must be a non-"),
        ([{"reply": "x", "delay_per_delta": "5ms"}], r"rule 0: `delay_per_delta` must be a non-"),
        ([{"reply": "x", "delay_per_delta": True}], r"rule 0: `delay_per_delta` must be a non-"),
        ([{"reply": "x", "delay_per_delta": None}], r"rule 0: `delay_per_delta` must be a non-"),
        ([{"reply": "x", "delay_per_delta": float("inf")}], r"`delay_per_delta` must be a non-"),
        ([{"tool_calls": {"name": "x"}}], r"rule 0: `tool_calls` must be a list"),
        ([{"tool_calls": [{"arguments": {}}]}], r"rule 0: tool call 0 needs a non-empty string"),
        ([{"tool_calls": [{"name": "x", "args": {}}]}], r"rule 0: tool call 0 has unknown keys"),
        ([{"tool_calls": [{"name": "x", "arguments": [1]}]}], r"`arguments` must be a mapping"),
        ([{"reply": "x", "engine": ""}], r"rule 0: `engine` must be a non-empty string"),
        ([{"reply": "x", "step": 3}], r"rule 0: `step` must be a non-empty string"),
        ([{"reply": "x", "recipe": None}], r"rule 0: `recipe` must be a non-empty string"),
    ],
)
def test_invalid_scripts_are_rejected_naming_the_rule_and_the_problem(
    script: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ScriptedProvider(script)


def test_engine_step_and_recipe_keys_must_all_match_the_call() -> None:
    # given a rule for marvin's plan step in the deep-think recipe, and one for any marvin call
    provider = ScriptedProvider(
        [
            {"engine": "marvin", "step": "plan", "recipe": "deep-think", "reply": "the plan"},
            {"engine": "marvin", "reply": "marvin, another step"},
        ]
    )

    def answer(info: CallInfo | None) -> str:
        return collect(provider.stream([user("hi")], None, info)).text

    # then all given keys must equal the call's
    assert answer(CallInfo("marvin", "plan", "deep-think")) == "the plan"
    assert answer(CallInfo("marvin", "plan", "other-recipe")) == "marvin, another step"
    assert answer(CallInfo("marvin", "aggregate", "deep-think")) == "marvin, another step"
    assert answer(CallInfo("zaphod", "plan", "deep-think")) == "echo: hi"
    # and a call that says nothing about itself matches only rules without those keys
    assert answer(None) == "echo: hi"


def test_engine_step_and_recipe_keys_are_read_from_a_yaml_script(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text("- {engine: ford, step: answer, reply: scripted for ford}\n")
    provider = ScriptedProvider(path)
    info = CallInfo(engine="ford", step="answer")
    assert collect(provider.stream([user("x")], None, info)).text == "scripted for ford"


def test_a_model_rule_matches_the_model_the_call_asks_for_or_the_providers_own() -> None:
    # given a rule for the fallback model and one for the provider's own model
    provider = ScriptedProvider(
        [
            {"step": "synthesize", "model": "backup", "reply": "from the backup"},
            {"step": "synthesize", "model": "main", "reply": "from the main model"},
        ],
        model="main",
    )

    def answer(info: CallInfo) -> str:
        return collect(provider.stream([user("hi")], None, info)).text

    # then a call naming the backup gets its rule, a call naming none gets the provider's
    assert answer(CallInfo(step="synthesize", model="backup")) == "from the backup"
    assert answer(CallInfo(step="synthesize")) == "from the main model"
    assert answer(CallInfo(step="synthesize", model="other")) == "echo: hi"


def test_an_error_rule_fails_the_call_with_a_provider_error_and_counts_its_times() -> None:
    # given a rule that fails the first skeptic call only
    provider = ScriptedProvider(
        [{"match": "system: skeptic", "error": "rate limited", "times": 1}, {"reply": "fine"}]
    )
    messages = [LlmMessage(role="system", content="You are the skeptic."), user("hi")]
    # when the skeptic calls twice, then the first call raises and the second is answered
    with pytest.raises(LlmError, match="^rate limited$"):
        provider.stream(messages)
    assert collect(provider.stream(messages)).text == "fine"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"error": ""}, r"rule 0: `error` must be a non-empty string"),
        ({"error": "down", "reply": "up"}, r"rule 0: `error` fails the call: it takes no"),
        ({"model": 3, "reply": "x"}, r"rule 0: `model` must be a non-empty string"),
    ],
)
def test_invalid_error_and_model_keys_are_rejected_naming_the_rule(
    rule: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ScriptedProvider([rule])


def test_invalid_yaml_file_is_rejected_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("- reply: [unclosed\n")

    with pytest.raises(ValueError, match=r"broken\.yaml is not valid YAML"):
        ScriptedProvider(path)


def test_script_file_that_is_not_a_list_is_rejected_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mapping.yaml"
    path.write_text("reply: hi\n")

    with pytest.raises(ValueError, match=r"mapping\.yaml must be a list of rules"):
        ScriptedProvider(path)


def test_missing_script_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot read LLM script .*missing\.yaml"):
        ScriptedProvider(tmp_path / "missing.yaml")


def after_tool_results(call: ToolCall, result: str) -> list[LlmMessage]:
    return [
        LlmMessage(role="assistant", content="", tool_calls=(call,)),
        LlmMessage(role="tool", content=result, tool_call_id=call.id),
    ]


def test_a_tool_call_rule_answers_a_user_message_once_then_the_next_rule_answers() -> None:
    # given a tool-call rule and a reply rule on the same message, no `times`
    provider = ScriptedProvider(
        [
            {"match": "^weather$", "tool_calls": [{"name": "get_weather", "arguments": {"c": 1}}]},
            {"match": "^weather$", "reply": "It is sunny."},
        ]
    )
    first = collect(provider.stream([user("weather")]))
    # when the loop calls again with the tool's result
    history = [user("weather"), *after_tool_results(first.tool_calls[0], "sunny")]
    second = collect(provider.stream(history))
    # then the reply rule answers, and a new message calls the tool again
    assert [call.name for call in first.tool_calls] == ["get_weather"]
    assert (second.text, second.tool_calls) == ("It is sunny.", [])
    again = collect(provider.stream([*history, LlmMessage("assistant", "x"), user("weather")]))
    assert [call.name for call in again.tool_calls] == ["get_weather"]


def test_with_no_rule_left_after_tool_results_the_echo_answers() -> None:
    provider = ScriptedProvider([{"tool_calls": [{"name": "now", "arguments": {}}]}])
    call = collect(provider.stream([user("time?")])).tool_calls[0]

    answer = collect(provider.stream([user("time?"), *after_tool_results(call, "12:00")]))

    assert (answer.text, answer.tool_calls) == ("echo: time?", [])
