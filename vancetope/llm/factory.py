"""Builds the configured LLM provider from Django settings (VANCETOPE_LLM and friends).

Providers are cached by the settings they were built from: the scripted provider's `times`
counters and tool-call ids must survive between calls in one process, while a change of settings
(say, pytest's `settings` fixture, or an edited script file) must give a fresh provider.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from vancetope.llm.base import LlmProvider
from vancetope.llm.scripted import ScriptedProvider

PROVIDER_KINDS = ("scripted", "openai", "anthropic")

_cache: dict[tuple[Any, ...], LlmProvider] = {}
_cache_lock = threading.Lock()


def get_provider() -> LlmProvider:
    """The provider VANCETOPE_LLM selects; the same instance while the settings stay the same."""
    key = _settings_key()
    with _cache_lock:
        provider = _cache.get(key)
        if provider is None:
            provider = _cache[key] = _build_provider(key[0])
        return provider


def describe_provider() -> str:
    """One line for the startup banner, e.g. `LLM: openai-compatible at <url>, model <m>`."""
    return f"LLM: {get_provider().describe()}"


def reset_provider_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _settings_key() -> tuple[Any, ...]:
    kind = settings.VANCETOPE_LLM
    if kind not in PROVIDER_KINDS:
        raise ImproperlyConfigured(
            f"VANCETOPE_LLM={kind!r} is not a known LLM provider; "
            f"use one of: {', '.join(PROVIDER_KINDS)}"
        )
    if kind == "anthropic" and not settings.ANTHROPIC_API_KEY:
        raise ImproperlyConfigured(
            "VANCETOPE_LLM=anthropic needs ANTHROPIC_API_KEY (your Anthropic API key); set it, "
            "or choose another provider (scripted, openai)"
        )
    shared = (kind, settings.VANCETOPE_LLM_MODEL)
    if kind == "scripted":
        script = settings.VANCETOPE_LLM_SCRIPT
        return (*shared, script, _modification_time(script))
    limits = (settings.VANCETOPE_LLM_TIMEOUT, settings.VANCETOPE_LLM_MAX_TOKENS)
    if kind == "openai":
        return (*shared, *limits, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY)
    return (*shared, *limits, settings.ANTHROPIC_BASE_URL, settings.ANTHROPIC_API_KEY)


def _modification_time(script: str) -> int | None:
    """Part of the cache key, so an edited script is reloaded without a restart."""
    if not script:
        return None
    try:
        return Path(script).stat().st_mtime_ns
    except OSError:
        # Missing files are reported by ScriptedProvider with a clearer message.
        return None


def _build_provider(kind: str) -> LlmProvider:
    # The SDKs are imported only for the provider that uses them: importing both took about
    # 1.5 s of every Brain's and worker's start, with the scripted provider needing neither.
    if kind == "scripted":
        return ScriptedProvider(
            settings.VANCETOPE_LLM_SCRIPT or None, model=settings.VANCETOPE_LLM_MODEL
        )
    if kind == "openai":
        from vancetope.llm.openai_provider import OpenAICompatibleProvider

        return OpenAICompatibleProvider(
            model=settings.VANCETOPE_LLM_MODEL,
            base_url=settings.OPENAI_BASE_URL,
            api_key=settings.OPENAI_API_KEY,
            timeout=settings.VANCETOPE_LLM_TIMEOUT,
            max_tokens=settings.VANCETOPE_LLM_MAX_TOKENS,
        )
    from vancetope.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(
        model=settings.VANCETOPE_LLM_MODEL,
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL,
        timeout=settings.VANCETOPE_LLM_TIMEOUT,
        max_tokens=settings.VANCETOPE_LLM_MAX_TOKENS,
    )
