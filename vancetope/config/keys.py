"""The Brain's own setting keys: the LLM provider, model, base URL and API key.

Their defaults are today's environment settings (VANCETOPE_LLM, VANCETOPE_LLM_MODEL,
OPENAI_BASE_URL / ANTHROPIC_BASE_URL, OPENAI_API_KEY / ANTHROPIC_API_KEY,
VANCETOPE_LLM_FALLBACK_MODEL), read when a value is resolved, so a Brain with no stored setting
behaves exactly as the environment says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from vancetope.config.registry import SettingKey, SettingType, register

PROVIDERS = ("scripted", "openai", "anthropic")


def _provider(resolved: Mapping[str, Any]) -> str:
    return str(settings.VANCETOPE_LLM)


def _base_url(resolved: Mapping[str, Any]) -> str:
    """The environment's base URL of the provider in effect."""
    provider = resolved.get(PROVIDER.name, settings.VANCETOPE_LLM)
    if provider == "openai":
        return str(settings.OPENAI_BASE_URL)
    if provider == "anthropic":
        return str(settings.ANTHROPIC_BASE_URL)
    return ""


def _api_key(resolved: Mapping[str, Any]) -> str:
    provider = resolved.get(PROVIDER.name, settings.VANCETOPE_LLM)
    if provider == "openai":
        return str(settings.OPENAI_API_KEY)
    if provider == "anthropic":
        return str(settings.ANTHROPIC_API_KEY)
    return ""


def _http_url(value: str) -> str:
    if not value:
        return ""  # empty: the provider's own default
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"must be an http:// or https:// URL, not {value!r}"
    return ""


PROVIDER = register(
    SettingKey(
        name="llm.provider",
        type=SettingType.STRING,
        default=_provider,
        description="The LLM provider: scripted (offline), openai (any OpenAI-compatible "
        "server) or anthropic. Default: VANCETOPE_LLM.",
        choices=PROVIDERS,
        operator=True,
    )
)
MODEL = register(
    SettingKey(
        name="llm.model",
        type=SettingType.STRING,
        default=lambda resolved: str(settings.VANCETOPE_LLM_MODEL),
        description="The model every LLM call asks for; empty: the provider's default. "
        "Default: VANCETOPE_LLM_MODEL.",
    )
)
BASE_URL = register(
    SettingKey(
        name="llm.baseUrl",
        type=SettingType.STRING,
        default=_base_url,
        description="The provider's base URL (an OpenAI-compatible server's, e.g. "
        "http://127.0.0.1:11434/v1); empty: the provider's own. Default: OPENAI_BASE_URL or "
        "ANTHROPIC_BASE_URL, by provider.",
        operator=True,
        check=_http_url,
    )
)
API_KEY = register(
    SettingKey(
        name="llm.apiKey",
        type=SettingType.STRING,
        default=_api_key,
        description="The provider's API key (write-only). Default: OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY, by provider.",
        secret=True,
        operator=True,
    )
)
FALLBACK_MODEL = register(
    SettingKey(
        name="llm.fallbackModel",
        type=SettingType.STRING,
        default=lambda resolved: str(settings.VANCETOPE_LLM_FALLBACK_MODEL),
        description="The model a step may fall back to when its call fails (zaphod's "
        "synthesizer); empty: none. Default: VANCETOPE_LLM_FALLBACK_MODEL.",
    )
)
