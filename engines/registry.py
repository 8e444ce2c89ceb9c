"""The Think Engine registry: name → engine, filled at startup by discover_engines()."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import TypeVar

from engines.base import Contract, ThinkEngine

ENGINE_PACKAGE = "engines.builtin"
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_registry: dict[str, ThinkEngine] = {}
# Alias → engine name (ThinkEngine.aliases).
_aliases: dict[str, str] = {}

E = TypeVar("E", bound=type[ThinkEngine])


def register_engine(cls: E) -> E:
    """Class decorator: register one instance of the engine under its name."""
    if not _NAME.match(cls.name):
        raise ValueError(f"engine name {cls.name!r} must be lowercase-kebab")
    if not isinstance(getattr(cls, "contract", None), Contract):
        # Without one the contract test cannot drive the engine (engines/base.py, Contract).
        raise ValueError(f"engine {cls.name!r} declares no contract")
    existing = _registry.get(cls.name)
    if existing is not None and type(existing) is not cls:
        raise ValueError(f"engine {cls.name!r} registered twice")
    _registry[cls.name] = cls()
    for alias in cls.aliases:
        if alias in _registry or _aliases.get(alias, cls.name) != cls.name:
            raise ValueError(f"engine alias {alias!r} of {cls.name!r} is taken")
        _aliases[alias] = cls.name
    return cls


def discover_engines() -> None:
    """Import every module of the built-in engine package; each registers itself."""
    package = importlib.import_module(ENGINE_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{ENGINE_PACKAGE}.{module.name}")


def get_engine(name: str) -> ThinkEngine | None:
    """The engine of `name`, or of the engine `name` is an alias of."""
    return _registry.get(name) or _registry.get(_aliases.get(name, ""))


def all_engines() -> list[ThinkEngine]:
    return [_registry[name] for name in sorted(_registry)]


def is_compatible(name: str, stored_version: str) -> bool:
    """A process may continue only if its engine exists with the same major version."""
    engine = _registry.get(name)
    return engine is not None and engine.major_version() == stored_version.split(".", 1)[0]
