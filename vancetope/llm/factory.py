"""Builds the LLM provider a call uses, from an `LlmConfig`: the settings llm.provider,
llm.model, llm.baseUrl and llm.apiKey as the cascade resolved them for the process
(vancetope/config/), or, with none given, the environment (VANCETOPE_LLM and friends).

Providers are cached by the configuration they were built from: the scripted provider's `times`
counters and tool-call ids must survive between calls in one process, while a change of any
part (a project's llm.model, a rotated key, pytest's `settings` fixture, an edited script file)
gives a fresh provider, never a stale client. The cache keeps the most recently used few.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from vancetope.llm.base import (
    CallInfo,
    LlmError,
    LlmMessage,
    LlmProvider,
    StreamItem,
    ToolSchema,
)
from vancetope.llm.scripted import ScriptedProvider

PROVIDER_KINDS = ("scripted", "openai", "anthropic")
# Providers kept (one per configuration in use: a few projects with their own models or keys).
CACHED_PROVIDERS = 64

_cache: OrderedDict[tuple[Any, ...], LlmProvider] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class LlmConfig:
    """What selects a provider. Empty `base_url` / `api_key`: the environment's for `kind`."""

    kind: str
    model: str = ""
    base_url: str = ""
    api_key: str = ""

    @classmethod
    def from_env(cls) -> LlmConfig:
        return cls(kind=settings.VANCETOPE_LLM, model=settings.VANCETOPE_LLM_MODEL)

    def describe(self) -> str:
        """For errors and logs: never the key."""
        return f"{self.kind} at {self.base_url or 'its default URL'}, model {self.model or '-'}"


class LlmConfigError(LlmError):
    """The configured provider cannot be built (no key, unknown kind): a retry will not help
    until the settings are fixed, so a turn waits BLOCKED at once (never terminal)."""


class MisconfiguredProvider(LlmProvider):
    """Stands in for a provider whose settings are wrong: every call raises LlmConfigError,
    so the lane blocks the turn with the reason instead of failing it."""

    name = "misconfigured"

    def __init__(self, problem: str) -> None:
        self.model = ""
        self.problem = problem

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
    ) -> Iterator[StreamItem]:
        raise LlmConfigError(self.problem)

    def describe(self) -> str:
        return f"not configured: {self.problem}"


def get_provider(config: LlmConfig | None = None) -> LlmProvider:
    """The provider of `config` (the environment's when None); the same instance while the
    configuration stays the same. With the environment's, a misconfiguration raises
    ImproperlyConfigured (the Brain refuses to start); with a resolved `config` it never
    raises: calls of the provider returned raise LlmConfigError instead."""
    if config is None:
        return _cached(_key(LlmConfig.from_env()))
    try:
        key = _key(config)
    except ImproperlyConfigured as problem:
        return MisconfiguredProvider(str(problem))
    return _cached(key)


def describe_provider() -> str:
    """One line for the startup banner, e.g. `LLM: openai-compatible at <url>, model <m>`."""
    return f"LLM: {get_provider().describe()}"


def reset_provider_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _cached(key: tuple[Any, ...]) -> LlmProvider:
    with _cache_lock:
        provider = _cache.get(key)
        if provider is None:
            provider = _cache[key] = _build_provider(key)
            while len(_cache) > CACHED_PROVIDERS:
                _cache.popitem(last=False)
        else:
            _cache.move_to_end(key)
        return provider


def _key(config: LlmConfig) -> tuple[Any, ...]:
    """The cache key: everything the provider is built from (empty parts filled in from the
    environment), so two configurations that build the same provider share it."""
    kind = config.kind
    if kind not in PROVIDER_KINDS:
        raise ImproperlyConfigured(
            f"VANCETOPE_LLM={kind!r} is not a known LLM provider; "
            f"use one of: {', '.join(PROVIDER_KINDS)}"
        )
    if kind == "scripted":
        script = settings.VANCETOPE_LLM_SCRIPT
        return (kind, config.model, script, _modification_time(script))
    limits = (settings.VANCETOPE_LLM_TIMEOUT, settings.VANCETOPE_LLM_MAX_TOKENS)
    if kind == "openai":
        base_url = config.base_url or settings.OPENAI_BASE_URL
        api_key = config.api_key or settings.OPENAI_API_KEY
        return (kind, config.model, *limits, base_url, api_key)
    api_key = config.api_key or settings.ANTHROPIC_API_KEY
    if not api_key:
        raise ImproperlyConfigured(
            "VANCETOPE_LLM=anthropic needs ANTHROPIC_API_KEY (your Anthropic API key); set it "
            "(or the setting llm.apiKey), or choose another provider (scripted, openai)"
        )
    base_url = config.base_url or settings.ANTHROPIC_BASE_URL
    return (kind, config.model, *limits, base_url, api_key)


def _modification_time(script: str) -> int | None:
    """Part of the cache key, so an edited script is reloaded without a restart."""
    if not script:
        return None
    try:
        return Path(script).stat().st_mtime_ns
    except OSError:
        # Missing files are reported by ScriptedProvider with a clearer message.
        return None


def _build_provider(key: tuple[Any, ...]) -> LlmProvider:
    # The SDKs are imported only for the provider that uses them: importing both took about
    # 1.5 s of every Brain's and worker's start, with the scripted provider needing neither.
    kind, model = key[0], key[1]
    if kind == "scripted":
        return ScriptedProvider(key[2] or None, model=model)
    timeout, max_tokens, base_url, api_key = key[2:]
    if kind == "openai":
        from vancetope.llm.openai_provider import OpenAICompatibleProvider

        return OpenAICompatibleProvider(
            model=model, base_url=base_url, api_key=api_key, timeout=timeout, max_tokens=max_tokens
        )
    from vancetope.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(
        model=model, api_key=api_key, base_url=base_url, timeout=timeout, max_tokens=max_tokens
    )
