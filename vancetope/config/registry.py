"""The one registry of typed setting keys: name, type, default, description,
secret flag and namespace.

A key's name is `namespace.name`: the Brain's own keys live in namespaces such as `llm`, an
engine's in the engine's name (`arthur.maxSteps`). Values are set at tenant, project group,
project or session scope (vancetope/config/cascade.py); every write is checked here first, so
a stored value always has the key's type.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from vancetope.errors import BadRequest


class SettingType(StrEnum):
    """The JSON type of a key's values (JSON Schema's names)."""

    STRING = "string"
    INTEGER = "integer"  # a whole number; true and false are not numbers here
    NUMBER = "number"  # an integer or a float
    BOOLEAN = "boolean"
    OBJECT = "object"
    ARRAY = "array"


_CHECKS: dict[SettingType, Callable[[Any], bool]] = {
    SettingType.STRING: lambda value: isinstance(value, str),
    SettingType.INTEGER: lambda value: isinstance(value, int) and not isinstance(value, bool),
    SettingType.NUMBER: lambda value: (
        isinstance(value, int | float) and not isinstance(value, bool)
    ),
    SettingType.BOOLEAN: lambda value: isinstance(value, bool),
    SettingType.OBJECT: lambda value: isinstance(value, dict),
    SettingType.ARRAY: lambda value: isinstance(value, list),
}


class SettingRefused(BadRequest):
    """A value (or key) a write cannot store: a 400 whose message names the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


# A default: a value, or a function of the values resolved so far (registration order), so
# `llm.baseUrl` can default to the environment's URL of the effective `llm.provider`.
Default = Any | Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class SettingKey:
    name: str
    type: SettingType
    default: Default
    description: str
    # Write-only over the API and the admin (shown as "***"), encrypted at rest, and never in
    # an engine's ctx.settings.
    secret: bool = False
    # True for an engine's namespace: its keys reach that engine's ctx.settings unprefixed.
    engine: bool = False
    # The allowed values, if only some are.
    choices: tuple[Any, ...] = ()
    # At session scope only admins of the session's project may set it (a member may still
    # set the rest for their own session): where the Brain connects, with which key.
    operator: bool = False
    # Extra check of a well-typed value: returns what is wrong ("" when nothing is).
    check: Callable[[Any], str] | None = field(default=None, compare=False)

    @property
    def namespace(self) -> str:
        return self.name.partition(".")[0]

    @property
    def short_name(self) -> str:
        """The name inside its namespace (`maxSteps` of `arthur.maxSteps`)."""
        return self.name.partition(".")[2]

    def default_value(self, resolved: Mapping[str, Any]) -> Any:
        return self.default(resolved) if callable(self.default) else self.default

    def validate(self, value: Any) -> Any:
        """`value` if the key may hold it; otherwise SettingRefused naming the key."""
        if value is None:
            raise SettingRefused(self.name, f"a value is required ({_article(self.type)})")
        if not _CHECKS[self.type](value):
            raise SettingRefused(
                self.name, f"must be {_article(self.type)}, not {type(value).__name__} {value!r}"
            )
        if self.choices and value not in self.choices:
            allowed = ", ".join(str(choice) for choice in self.choices)
            raise SettingRefused(self.name, f"must be one of {allowed}, not {value!r}")
        problem = self.check(value) if self.check is not None else ""
        if problem:
            raise SettingRefused(self.name, problem)
        return value


def _article(kind: SettingType) -> str:
    vowel = kind in (SettingType.INTEGER, SettingType.OBJECT, SettingType.ARRAY)
    return f"an {kind}" if vowel else f"a {kind}"


_keys: dict[str, SettingKey] = {}
# engine_keys() and brain_keys() ("") by engine, dropped whenever a key is registered.
_by_engine: dict[str, list[SettingKey]] = {}
_lock = threading.Lock()


def register(key: SettingKey) -> SettingKey:
    """Add a key; registering the same key again is a no-op, another key of that name an
    error (two parts of the Brain would disagree about it)."""
    if "." not in key.name or not key.short_name:
        raise ValueError(f"setting key {key.name!r} must be namespace.name")
    if key.default is not None and not callable(key.default):
        key.validate(key.default)
    with _lock:
        existing = _keys.get(key.name)
        if existing is not None and existing != key:
            raise ValueError(f"setting key {key.name!r} registered twice, differently")
        _keys[key.name] = key
        _by_engine.clear()
    return key


def type_of(value: Any) -> SettingType:
    """The type of a default value (an engine's default_settings entry)."""
    for kind in (SettingType.BOOLEAN, SettingType.INTEGER, SettingType.NUMBER):
        if _CHECKS[kind](value):
            return kind
    for kind in (SettingType.STRING, SettingType.OBJECT, SettingType.ARRAY):
        if _CHECKS[kind](value):
            return kind
    raise ValueError(f"no setting type holds {value!r}")


def register_engine_settings(
    engine: str, defaults: Mapping[str, Any], descriptions: Mapping[str, str]
) -> list[SettingKey]:
    """An engine's keys: each entry of `descriptions` (the defaults it documents), typed by
    its default in `defaults`, in the engine's namespace."""
    keys = []
    for short_name, description in descriptions.items():
        if short_name not in defaults:
            raise ValueError(f"engine {engine!r} describes setting {short_name!r} with no default")
        default = defaults[short_name]
        keys.append(
            register(
                SettingKey(
                    name=f"{engine}.{short_name}",
                    type=type_of(default),
                    default=default,
                    description=description,
                    engine=True,
                )
            )
        )
    return keys


def get_key(name: str) -> SettingKey:
    """The registered key; an unknown one is a 400 naming it."""
    key = _keys.get(name)
    if key is None:
        raise SettingRefused(name, "not a setting key (GET /api/settings lists them)")
    return key


def all_keys() -> list[SettingKey]:
    """Every key, in registration order (a default may read the keys before it)."""
    return list(_keys.values())


def engine_keys(engine: str) -> list[SettingKey]:
    """The keys of an engine's namespace (kept per engine: a turn asks for them)."""
    found = _by_engine.get(engine)
    if found is None:
        found = [key for key in _keys.values() if key.engine and key.namespace == engine]
        with _lock:
            _by_engine[engine] = found
    return found


def brain_keys() -> list[SettingKey]:
    """The keys of no engine (the llm ones)."""
    found = _by_engine.get("")
    if found is None:
        found = [key for key in _keys.values() if not key.engine]
        with _lock:
            _by_engine[""] = found
    return found
