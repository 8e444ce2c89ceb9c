"""Builds the LLM provider a call uses, from an `LlmConfig`: the settings llm.provider,
llm.model, llm.baseUrl and llm.apiKey as the cascade resolved them for the process
(vancetope/config/), or, with none given, the environment (VANCETOPE_LLM and friends).

Providers are cached by the configuration they were built from: the scripted provider's `times`
counters and tool-call ids must survive between calls in one process, while a change of any
part (a project's llm.model, a rotated key, pytest's `settings` fixture, an edited script file)
gives a fresh provider, never a stale client. The cache keeps the most recently used few.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http.request import validate_host

from vancetope.llm.base import (
    CallInfo,
    LlmError,
    LlmMessage,
    LlmProvider,
    StreamItem,
    ToolSchema,
)
from vancetope.llm.local_model import LocalModelProblem, resolve_model
from vancetope.llm.script_rules import resolve_script
from vancetope.llm.scripted import ScriptedProvider
from vancetope.observability import metrics

PROVIDER_KINDS = ("scripted", "openai", "anthropic", "local")
# Providers kept (one per configuration in use: a few projects with their own models or keys).
CACHED_PROVIDERS = 64

_cache: OrderedDict[tuple[Any, ...], LlmProvider] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class LlmConfig:
    """What selects a provider. An empty `base_url` is the environment's URL for `kind` (the
    operator's); an empty `api_key` is no key: the environment's key is only ever used where
    it was resolved with the environment's URL (`from_env`, vancetope/config/llm.py), never
    filled in here, so a URL set by someone else never receives it."""

    kind: str
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    # Why a key in effect was not sent with this URL (for the error a keyless call may get).
    withheld: str = ""

    @classmethod
    def from_env(cls) -> LlmConfig:
        kind = settings.VANCETOPE_LLM
        return cls(kind=kind, model=settings.VANCETOPE_LLM_MODEL, api_key=environment_key(kind))

    def describe(self) -> str:
        """For errors and logs: never the key."""
        return f"{self.kind} at {self.base_url or 'its default URL'}, model {self.model or '-'}"


def environment_key(kind: str) -> str:
    """The operator's key for `kind`, from the environment."""
    if kind == "openai":
        return str(settings.OPENAI_API_KEY)
    if kind == "anthropic":
        return str(settings.ANTHROPIC_API_KEY)
    return ""


def environment_url(kind: str) -> str:
    """The operator's base URL for `kind`, from the environment ("" for the provider's own)."""
    if kind == "openai":
        return str(settings.OPENAI_BASE_URL)
    if kind == "anthropic":
        return str(settings.ANTHROPIC_BASE_URL)
    return ""


# An allow-list entry that names a port, and the port a URL without one goes to.
WITH_PORT = re.compile(r":[0-9]+$")
DEFAULT_PORTS = {"http": 80, "https": 443}


def check_allowed_url(url: str, kind: str) -> str:
    """What is wrong with sending LLM calls to `url` under the operator's allow-list
    (VANCETOPE_LLM_ALLOWED_HOSTS, Django's ALLOWED_HOSTS syntax); "" when nothing is. The
    environment's own URL and a provider's default one are always allowed."""
    allowed = settings.VANCETOPE_LLM_ALLOWED_HOSTS
    if not allowed or not url or url == environment_url(kind):
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    # An entry with a port (`llm.internal:8443`) allows that port only; one without, any.
    ported = {entry.lower() for entry in allowed if WITH_PORT.search(entry)}
    plain = [entry for entry in allowed if not WITH_PORT.search(entry)]
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return f"the URL {url!r} has no valid port"
    if validate_host(host, plain) or f"{host}:{port}" in ported:
        return ""
    shown = f"{host}:{port}" if ported else host
    return f"host {shown!r} is not in the operator's VANCETOPE_LLM_ALLOWED_HOSTS"


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
        *,
        force_tool: str | None = None,
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
            # Its model (the configured one, else the provider's own default) is a name
            # /metrics shows.
            metrics.allow_models([provider.model])
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
        script = resolve_script(settings.VANCETOPE_LLM_SCRIPT)
        return (kind, config.model, script, _modification_time(script))
    if kind == "local":
        # The GGUF file is the Brain's (an operator's) choice, never a project's llm.model:
        # a setting anyone may change must not name a file the Brain then reads.
        try:
            path = resolve_model(settings.VANCETOPE_LOCAL_MODEL)
        except LocalModelProblem as problem:
            raise ImproperlyConfigured(str(problem)) from problem
        sizes = (settings.VANCETOPE_LOCAL_CONTEXT, settings.VANCETOPE_LLM_MAX_TOKENS)
        return (kind, "", *sizes, temperature(), path)
    limits = (
        settings.VANCETOPE_LLM_TIMEOUT,
        settings.VANCETOPE_LLM_MAX_TOKENS,
        temperature(),
        settings.VANCETOPE_LLM_MAX_CONCURRENT,
    )
    base_url = config.base_url or environment_url(kind)
    refused = check_allowed_url(base_url, kind)
    if refused:
        raise ImproperlyConfigured(f"llm.baseUrl {base_url}: {refused}")
    if kind == "openai":
        return (kind, config.model, *limits, base_url, config.api_key)
    if not config.api_key:
        raise ImproperlyConfigured(
            config.withheld
            or "VANCETOPE_LLM=anthropic needs ANTHROPIC_API_KEY (your Anthropic API key); set "
            "it (or the setting llm.apiKey), or choose another provider (scripted, openai)"
        )
    return (kind, config.model, *limits, base_url, config.api_key)


def temperature() -> float | None:
    """VANCETOPE_LLM_TEMPERATURE as a number; None (the server's default) when unset."""
    raw = settings.VANCETOPE_LLM_TEMPERATURE
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError as error:
        raise ImproperlyConfigured(
            f"VANCETOPE_LLM_TEMPERATURE={raw!r} is not a number (e.g. 0, or 0.7)"
        ) from error


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
    if kind == "local":
        from vancetope.llm.local_provider import LocalProvider

        context_tokens, max_tokens, degrees, path = key[2:]
        return LocalProvider(
            model_path=path,
            context_tokens=context_tokens,
            max_tokens=max_tokens,
            temperature=degrees,
        )
    timeout, max_tokens, degrees, concurrent, base_url, api_key = key[2:]
    if kind == "openai":
        from vancetope.llm.openai_provider import OpenAICompatibleProvider

        return OpenAICompatibleProvider(
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_tokens=max_tokens,
            temperature=degrees,
            max_concurrent=concurrent,
        )
    from vancetope.llm.anthropic_provider import AnthropicProvider

    # The Messages API of current models takes no temperature: VANCETOPE_LLM_TEMPERATURE is
    # for the OpenAI-compatible and local providers.
    return AnthropicProvider(
        model=model, api_key=api_key, base_url=base_url, timeout=timeout, max_tokens=max_tokens
    )
