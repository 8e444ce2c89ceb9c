"""The scripted provider's scripts: where they are (a bundled one by name), how a file is read,
and each rule validated into a `ScriptRule` (docs/protocol.md, "The scripted LLM's script";
vancetope/llm/scripted.py answers from them)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vancetope.llm.base import CallInfo

SYSTEM_PREFIX = "system:"
# Scripts shipped with the Brain, named by VANCETOPE_LLM_SCRIPT without a path (e.g. `demo`).
BUNDLED_SCRIPTS = Path(__file__).with_name("scripts")
# Keys matched against the call's CallInfo, exactly.
INFO_KEYS = ("engine", "step", "recipe", "model")
RULE_KEYS = frozenset(
    {"match", "reply", "tool_calls", "error", "times", "delay", "delay_per_delta", *INFO_KEYS}
)
TOOL_CALL_KEYS = frozenset({"name", "arguments"})


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    arguments: dict[str, Any]

    @property
    def key(self) -> str:
        return call_key(self.name, self.arguments)


def call_key(name: str, arguments: dict[str, Any]) -> str:
    """A tool call's name and arguments as one comparable string."""
    return name + json.dumps(arguments, sort_keys=True, default=str)


@dataclass(frozen=True)
class ScriptRule:
    """One validated script rule; `pattern` None means "matches every call"."""

    index: int
    pattern: re.Pattern[str] | None
    matches_system_prompt: bool
    reply: str
    tool_calls: tuple[ScriptedToolCall, ...]
    times: int | None
    delay: float
    # None: the provider's delay_per_delta applies.
    delay_per_delta: float | None = None
    # (key, value) pairs of INFO_KEYS the call's CallInfo must equal.
    info: tuple[tuple[str, str], ...] = ()
    # Non-empty: the call fails with LlmError(error) instead of answering.
    error: str = ""

    def matches(self, last_user_message: str, system_prompt: str, info: CallInfo) -> bool:
        if any(getattr(info, key) != value for key, value in self.info):
            return False
        if self.pattern is None:
            return True
        haystack = system_prompt if self.matches_system_prompt else last_user_message
        return self.pattern.search(haystack) is not None


def resolve_script(value: str) -> str:
    """VANCETOPE_LLM_SCRIPT as a file path: a bare name (`demo`) is a bundled script's."""
    if value and not Path(value).suffix and "/" not in value and "\\" not in value:
        bundled = BUNDLED_SCRIPTS / f"{value}.yaml"
        if bundled.is_file():
            return str(bundled)
    return value


def bundled_script_name(path: Path | None) -> str:
    """The name of a bundled script (`demo`), "" for any other file."""
    if path is None or path.parent.resolve() != BUNDLED_SCRIPTS.resolve():
        return ""
    return path.stem


def load_script_file(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read LLM script {path}: {error}") from error
    except yaml.YAMLError as error:
        raise ValueError(f"LLM script {path} is not valid YAML: {error}") from error


def parse_script(script: Any, *, source: Path | None = None) -> tuple[ScriptRule, ...]:
    """Validate a parsed script; any problem is a ValueError naming the rule and the field."""
    where = f"LLM script {source}" if source else "LLM script"
    if not isinstance(script, list):
        raise ValueError(f"{where} must be a list of rules, got {type(script).__name__}")
    return tuple(_parse_rule(index, raw, where) for index, raw in enumerate(script))


def _parse_rule(index: int, raw: Any, where: str) -> ScriptRule:
    def problem(text: str) -> ValueError:
        return ValueError(f"{where}, rule {index}: {text}")

    if not isinstance(raw, Mapping):
        raise problem(f"must be a mapping, got {type(raw).__name__}")
    unknown = set(raw) - RULE_KEYS
    if unknown:
        raise problem(
            f"unknown keys {sorted(map(str, unknown))}; allowed: {', '.join(sorted(RULE_KEYS))}"
        )
    fails_with = raw.get("error", "")
    if "error" in raw:
        if not isinstance(fails_with, str) or not fails_with:
            raise problem(f"`error` must be a non-empty string, got {fails_with!r}")
        if "reply" in raw or "tool_calls" in raw:
            raise problem("`error` fails the call: it takes no `reply` or `tool_calls`")
    elif "reply" not in raw and "tool_calls" not in raw:
        raise problem("needs a `reply` and/or `tool_calls` (or an `error`)")

    pattern, matches_system_prompt = None, False
    if "match" in raw:
        match = raw["match"]
        if not isinstance(match, str):
            raise problem(f"`match` must be a string, got {type(match).__name__}")
        if match.startswith(SYSTEM_PREFIX):
            matches_system_prompt = True
            # `system: planner` reads naturally in YAML; the space after the colon is not meant
            # to be part of the pattern.
            match = match[len(SYSTEM_PREFIX) :].lstrip()
        try:
            pattern = re.compile(match)
        except re.error as error:
            raise problem(f"`match` is not a valid regular expression ({error})") from error

    reply = raw.get("reply", "")
    if not isinstance(reply, str):
        raise problem(f"`reply` must be a string, got {type(reply).__name__}")

    times = raw.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
        raise problem(f"`times` must be a positive integer, got {times!r}")

    delay = _seconds(raw, "delay", problem)
    delay_per_delta = _seconds(raw, "delay_per_delta", problem)
    info = []
    for key in INFO_KEYS:
        if key in raw:
            value = raw[key]
            if not isinstance(value, str) or not value:
                raise problem(f"`{key}` must be a non-empty string, got {value!r}")
            info.append((key, value))

    return ScriptRule(
        index=index,
        pattern=pattern,
        matches_system_prompt=matches_system_prompt,
        reply=reply,
        tool_calls=_parse_tool_calls(raw.get("tool_calls", []), problem),
        times=times,
        delay=delay or 0.0,
        delay_per_delta=delay_per_delta,
        info=tuple(info),
        error=fails_with,
    )


def _seconds(
    raw: Mapping[str, Any], key: str, problem: Callable[[str], ValueError]
) -> float | None:
    """The rule's `key` as a non-negative number of seconds, or None when the rule has none."""
    if key not in raw:
        return None
    value = raw[key]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise problem(f"`{key}` must be a non-negative number of seconds, got {value!r}")
    return float(value)


def _parse_tool_calls(
    raw: Any, problem: Callable[[str], ValueError]
) -> tuple[ScriptedToolCall, ...]:
    if not isinstance(raw, list):
        raise problem(f"`tool_calls` must be a list, got {type(raw).__name__}")
    calls = []
    for position, call in enumerate(raw):
        if not isinstance(call, Mapping):
            raise problem(f"tool call {position} must be a mapping with `name` and `arguments`")
        unknown = set(call) - TOOL_CALL_KEYS
        if unknown:
            raise problem(f"tool call {position} has unknown keys {sorted(map(str, unknown))}")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise problem(f"tool call {position} needs a non-empty string `name`")
        arguments = call.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise problem(f"tool call {position} `arguments` must be a mapping")
        calls.append(ScriptedToolCall(name=name, arguments=dict(arguments)))
    return tuple(calls)
