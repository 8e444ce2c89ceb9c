"""The offline, deterministic provider (docs/protocol.md, "The scripted LLM's script").

With no script it answers `echo: ` + the last user message. A script is a YAML list of rules,
tried in order; the first rule that matches (and has not used up its `times`, counted per
provider instance, and the factory keeps one per Brain process) answers:

    - match: "weather in (Paris|Rome)"      # regex searched in the last user message
      tool_calls:
        - name: get_weather
          arguments: {city: Paris}
      times: 1                              # fires at most once per provider instance
    - match: "system: you are a planner"    # `system:` + regex searched in the system prompt
      reply: "1. think 2. act"
      delay: 0.5                            # seconds to wait before the first delta
    - match: "tell me a story"
      reply: "Once upon a time ..."
      delay_per_delta: 0.01                 # seconds to wait before each word: a slow stream
    - engine: marvin                        # who calls (CallInfo): all given keys must match
      step: plan                            # the engine's step (docs/engines.md lists them)
      recipe: deep-think                    # the process's recipe
      tool_calls: [{name: plan_tasks, arguments: {tasks: []}}]
    - step: synthesize
      model: backup-model                   # the model the call asks for: the provider's own
      reply: "from the fallback"            #   (VANCETOPE_LLM_MODEL, else `scripted`) unless
                                            #   the engine asked for another (a fallback)
    - engine: ford
      match: "system: skeptic"
      error: "rate limited"                 # the call fails: raises LlmError("rate limited"),
                                            #   as a real provider's failure would
    - reply: "fallback for everything else" # no `match`: matches every call

Token usage is counted in whitespace-separated words so tests can assert on it: prompt tokens are
the words of every input message's content; completion tokens are the words of the reply plus,
per tool call, the words of its name and of `json.dumps(arguments)` (default separators, so
`{"city": "Paris"}` is two words).

A rule with `error` answers nothing: the call raises `LlmError` with that text when it is made
(`times` counts it like any answer), so a script can make one engine's, step's or persona's
provider fail. It takes no `reply` or `tool_calls`.

A structured step's forced tool (`force_tool`) does not change a rule's answer: the script says
what the "model" does, a call of the forced tool or not. With no rule, the echo calls the forced
tool with the smallest arguments its schema allows, the echo in every text field
(vancetope/llm/schema_fill.py), so a structured step works on the bare offline default.

A rule with `tool_calls` answers a user message once: when the calls after that message (the
tool loop of one turn) already hold its calls, same names and arguments, with their results,
the rule is passed over and the next matching rule answers, so no `times: 1` twin is needed to
stop a tool loop from calling the same tool for ever (when no rule is left, the echo answers).

A rule's `delay_per_delta` replaces the provider's own (the `delay_per_delta` constructor
argument, 0 by default) for that rule's replies; the echo and rules without it use the
provider's.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import operator
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from vancetope.llm.schema_fill import minimal_arguments
from vancetope.llm.script_rules import (
    ScriptedToolCall,
    ScriptRule,
    bundled_script_name,
    call_key,
    load_script_file,
    parse_script,
)


def messages_since_last_user(messages: list[LlmMessage]) -> list[LlmMessage]:
    """The tool loop of the current turn: the messages after the last user message."""
    for position in range(len(messages) - 1, -1, -1):
        if messages[position].role == "user":
            return messages[position + 1 :]
    return []


def called(turn: list[LlmMessage]) -> frozenset[str]:
    """The tool calls the assistant made in this turn (call_key of each)."""
    return frozenset(
        call_key(call.name, call.arguments) for message in turn for call in message.tool_calls
    )


def split_into_word_deltas(text: str) -> list[str]:
    """Split text into one chunk per word, each keeping its trailing whitespace.

    Leading whitespace stays with the first word, so the chunks always join back to `text`.
    """
    chunks = re.findall(r"\s*\S+\s*", text)
    if not chunks and text:
        return [text]
    return chunks


@functools.lru_cache(maxsize=65536)
def count_words(text: str) -> int:
    # Cached: every call counts the whole history again, and a long conversation's earlier
    # messages are the same string objects each time (their hash is kept), so each earlier
    # message costs a cache lookup, not a split.
    return len(text.split())


CONTENT = operator.attrgetter("content")


class ScriptedProvider(LlmProvider):
    """Answers from a script of rules, or echoes; safe to share between threads."""

    name = "scripted"

    def __init__(
        self,
        script: str | os.PathLike[str] | list[Any] | None = None,
        *,
        model: str = "",
        delay_per_delta: float = 0.0,
    ) -> None:
        self.model = model or "scripted"
        self.delay_per_delta = delay_per_delta
        self.script_path: Path | None = None
        if isinstance(script, str | os.PathLike):
            self.script_path = Path(script)
            script = load_script_file(self.script_path)
        self.rules = parse_script(script if script is not None else [], source=self.script_path)
        self._reads_system_prompt = any(rule.matches_system_prompt for rule in self.rules)
        # `times` counters and tool-call ids are per instance; the factory caches the instance
        # so both survive between calls in one process.
        self._lock = threading.Lock()
        self._fired: dict[int, int] = {}
        self._tool_call_counter = 0

    def describe(self) -> str:
        bundled = bundled_script_name(self.script_path)
        if bundled:
            source = f" with the {bundled} script (docs/demo.md)"
        else:
            source = f" from {self.script_path}" if self.script_path else ""
        return (
            f"scripted{source} (offline; set VANCETOPE_LLM=local|openai|anthropic to use a "
            "real model)"
        )

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
        *,
        force_tool: str | None = None,
    ) -> Iterator[StreamItem]:
        # `force_tool` is taken and left to the script: a rule answers what it says, so a
        # test can still script a structured step that gives no call (and see the retry).
        # The rule is chosen when the call is made, not when the stream is first read, so the
        # order of `times` and tool-call ids follows the order of calls.
        last_user_message = next(
            (message.content for message in reversed(messages) if message.role == "user"), ""
        )
        this_turn = messages_since_last_user(messages)
        # Read only by a rule that matches the system prompt: a script without one (the echo
        # of the benchmarks) does not join a long history's system messages on every call.
        system_prompt = (
            "".join([m.content for m in messages if m.role == "system"])
            if self._reads_system_prompt
            else ""
        )
        # A call that names no model asks for the provider's own: rules match on that.
        asked = info or CallInfo()
        asked = dataclasses.replace(asked, model=asked.model or self.model)
        with self._lock:
            rule = self._claim_rule(last_user_message, system_prompt, asked, called(this_turn))
            tool_calls = self._number_tool_calls(rule.tool_calls if rule else ())
        if rule is not None and rule.error:
            raise LlmError(rule.error)
        reply = rule.reply if rule else f"echo: {last_user_message}"
        if rule is None and force_tool is not None:
            tool_calls = self._forced_call(force_tool, tools or [], last_user_message)
        # Counted by map over the cached count: no Python frame per message of a long history.
        prompt_tokens = sum(map(count_words, map(CONTENT, messages)))
        delay, delay_per_delta = 0.0, self.delay_per_delta
        if rule is not None:
            delay = rule.delay
            if rule.delay_per_delta is not None:
                delay_per_delta = rule.delay_per_delta
        return self._emit(reply, tool_calls, prompt_tokens, delay, delay_per_delta)

    def _claim_rule(
        self,
        last_user_message: str,
        system_prompt: str,
        info: CallInfo,
        called_this_turn: frozenset[str],
    ) -> ScriptRule | None:
        for rule in self.rules:
            if not rule.matches(last_user_message, system_prompt, info):
                continue
            if rule.tool_calls and {call.key for call in rule.tool_calls} <= called_this_turn:
                continue  # its calls were made and answered: the loop goes on to an answer
            fired = self._fired.get(rule.index, 0)
            if rule.times is not None and fired >= rule.times:
                continue
            self._fired[rule.index] = fired + 1
            return rule
        return None

    def _forced_call(self, name: str, tools: list[ToolSchema], text: str) -> list[ToolCall]:
        """No rule answers a call that must call `name`: the smallest call that fits its
        schema, the echo of the last user message in its text fields (none if it cannot)."""
        schema = next((tool.parameters for tool in tools if tool.name == name), None)
        arguments = minimal_arguments(schema, f"echo: {text}") if schema is not None else None
        if arguments is None:
            return []
        with self._lock:
            return self._number_tool_calls((ScriptedToolCall(name, arguments),))

    def _number_tool_calls(self, scripted: tuple[ScriptedToolCall, ...]) -> list[ToolCall]:
        calls = []
        for call in scripted:
            self._tool_call_counter += 1
            # A copy, so a caller that changes the arguments cannot change the script.
            arguments = copy.deepcopy(call.arguments)
            calls.append(ToolCall(f"call_{self._tool_call_counter}", call.name, arguments))
        return calls

    def _emit(
        self,
        reply: str,
        tool_calls: list[ToolCall],
        prompt_tokens: int,
        delay: float,
        delay_per_delta: float,
    ) -> Iterator[StreamItem]:
        if delay:
            time.sleep(delay)
        for chunk in split_into_word_deltas(reply):
            if delay_per_delta:
                time.sleep(delay_per_delta)
            yield TextDelta(chunk)
        yield from tool_calls
        completion_tokens = count_words(reply) + sum(
            count_words(call.name) + count_words(json.dumps(call.arguments)) for call in tool_calls
        )
        yield Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason="tool_calls" if tool_calls else "stop",
        )
