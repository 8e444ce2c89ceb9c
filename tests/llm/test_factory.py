from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from pytest_django import Settings

from tests.support.openai_stub import OpenAIStubServer
from vancetope.llm import factory
from vancetope.llm.anthropic_provider import AnthropicProvider
from vancetope.llm.base import LlmMessage, collect
from vancetope.llm.factory import (
    LlmConfig,
    LlmConfigError,
    MisconfiguredProvider,
    describe_provider,
    get_provider,
    reset_provider_cache,
)
from vancetope.llm.openai_provider import OpenAICompatibleProvider
from vancetope.llm.scripted import ScriptedProvider


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    reset_provider_cache()
    yield
    reset_provider_cache()


@pytest.fixture
def scripted_settings(settings: Settings) -> Settings:
    settings.VANCETOPE_LLM = "scripted"
    settings.VANCETOPE_LLM_MODEL = ""
    settings.VANCETOPE_LLM_SCRIPT = ""
    return settings


def ask(text: str) -> str:
    return collect(get_provider().stream([LlmMessage(role="user", content=text)])).text


def test_scripted_is_built_from_settings_and_echoes(scripted_settings: Settings) -> None:
    provider = get_provider()

    assert isinstance(provider, ScriptedProvider)
    assert provider.model == "scripted"
    assert ask("hello") == "echo: hello"


def test_the_same_settings_give_the_same_provider_so_times_counters_survive(
    scripted_settings: Settings, tmp_path: Path
) -> None:
    # given
    script = tmp_path / "script.yaml"
    script.write_text("- reply: only once\n  times: 1\n")
    scripted_settings.VANCETOPE_LLM_SCRIPT = str(script)

    # when
    replies = [ask("x"), ask("x")]

    # then
    assert get_provider() is get_provider()
    assert replies == ["only once", "echo: x"]


def test_changed_settings_give_a_new_provider(scripted_settings: Settings) -> None:
    # given
    before = get_provider()

    # when
    scripted_settings.VANCETOPE_LLM_MODEL = "scripted-large"

    # then
    after = get_provider()
    assert after is not before
    assert after.model == "scripted-large"


def test_an_edited_script_file_is_reloaded(scripted_settings: Settings, tmp_path: Path) -> None:
    # given
    script = tmp_path / "script.yaml"
    script.write_text("- reply: old\n")
    os.utime(script, ns=(1_000_000_000, 1_000_000_000))
    scripted_settings.VANCETOPE_LLM_SCRIPT = str(script)
    assert ask("x") == "old"

    # when: explicit timestamps, so the test need not wait for the clock to tick
    script.write_text("- reply: new\n")
    os.utime(script, ns=(2_000_000_000, 2_000_000_000))

    # then
    assert ask("x") == "new"


def test_an_invalid_script_from_settings_is_a_clear_error(
    scripted_settings: Settings, tmp_path: Path
) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("- match: '('\n  reply: x\n")
    scripted_settings.VANCETOPE_LLM_SCRIPT = str(script)

    with pytest.raises(ValueError, match=r"bad\.yaml, rule 0: `match` is not a valid"):
        get_provider()


def test_openai_is_built_with_base_url_model_key_and_limits(settings: Settings) -> None:
    # given
    settings.VANCETOPE_LLM = "openai"
    settings.VANCETOPE_LLM_MODEL = "qwen2.5:7b"
    settings.OPENAI_BASE_URL = "http://localhost:11434/v1"
    settings.OPENAI_API_KEY = ""
    settings.VANCETOPE_LLM_TIMEOUT = 30.0
    settings.VANCETOPE_LLM_MAX_TOKENS = 512

    # when
    provider = get_provider()

    # then
    assert isinstance(provider, OpenAICompatibleProvider)
    assert (provider.base_url, provider.model) == ("http://localhost:11434/v1", "qwen2.5:7b")
    assert provider.api_key == "not-needed"
    assert (provider.timeout, provider.max_tokens) == (30.0, 512)
    assert describe_provider() == (
        "LLM: openai-compatible at http://localhost:11434/v1, model qwen2.5:7b"
    )


def test_the_openai_provider_from_settings_talks_to_the_configured_server(
    settings: Settings,
) -> None:
    with OpenAIStubServer() as stub:
        # given
        settings.VANCETOPE_LLM = "openai"
        settings.OPENAI_BASE_URL = stub.base_url
        settings.OPENAI_API_KEY = "sk-test"

        # when
        reply = ask("ping")

        # then
        assert reply == "echo: ping"
        assert stub.recorded[0].headers["authorization"] == "Bearer sk-test"


def test_anthropic_is_built_with_key_base_url_and_model(settings: Settings) -> None:
    # given
    settings.VANCETOPE_LLM = "anthropic"
    settings.VANCETOPE_LLM_MODEL = ""
    settings.ANTHROPIC_API_KEY = "sk-ant-test"
    settings.ANTHROPIC_BASE_URL = ""

    # when
    provider = get_provider()

    # then
    assert isinstance(provider, AnthropicProvider)
    assert provider.api_key == "sk-ant-test"
    assert provider.model == "claude-sonnet-4-6"
    assert describe_provider() == (
        "LLM: anthropic at https://api.anthropic.com, model claude-sonnet-4-6"
    )


def test_describe_provider_tells_how_to_leave_the_offline_default(
    scripted_settings: Settings,
) -> None:
    assert describe_provider() == (
        "LLM: scripted (offline; set VANCETOPE_LLM=local|openai|anthropic to use a real model)"
    )


def test_an_unknown_provider_is_rejected_naming_the_allowed_values(
    settings: Settings,
) -> None:
    settings.VANCETOPE_LLM = "gemini"

    with pytest.raises(ImproperlyConfigured, match=r"'gemini'.*scripted, openai, anthropic"):
        get_provider()


def test_a_resolved_configuration_gets_its_own_provider_and_keeps_it(settings: Settings) -> None:
    # given the openai environment
    settings.VANCETOPE_LLM = "openai"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.OPENAI_API_KEY = "sk-env"
    project = LlmConfig(kind="openai", model="project-model")
    # when
    first, again = get_provider(project), get_provider(project)
    rotated = get_provider(LlmConfig(kind="openai", model="project-model", api_key="sk-new"))
    # then one provider per configuration, the environment filling in the URL it leaves
    # empty but never the key (a key goes only with the URL it was resolved with)
    assert first is again
    assert isinstance(first, OpenAICompatibleProvider)
    assert (first.model, first.base_url, first.api_key) == (
        "project-model",
        "http://127.0.0.1:9/v1",
        "not-needed",
    )
    assert get_provider().api_key == "sk-env"  # type: ignore[attr-defined]
    assert isinstance(rotated, OpenAICompatibleProvider)
    assert rotated is not first
    assert rotated.api_key == "sk-new"


def test_a_configuration_that_cannot_build_a_provider_fails_its_calls_not_the_caller(
    settings: Settings,
) -> None:
    # given anthropic with no key anywhere
    settings.ANTHROPIC_API_KEY = ""
    # when
    provider = get_provider(LlmConfig(kind="anthropic"))
    # then building it did not raise; its calls do, as a configuration error of the provider
    assert isinstance(provider, MisconfiguredProvider)
    with pytest.raises(LlmConfigError, match="needs ANTHROPIC_API_KEY"):
        collect(provider.stream([LlmMessage(role="user", content="hi")]))
    assert isinstance(get_provider(LlmConfig(kind="gemini")), MisconfiguredProvider)


def test_the_provider_cache_keeps_only_the_most_recently_used(scripted_settings: Settings) -> None:
    # given more configurations than the cache keeps
    first = get_provider(LlmConfig(kind="scripted", model="m-0"))
    for number in range(1, factory.CACHED_PROVIDERS + 1):
        get_provider(LlmConfig(kind="scripted", model=f"m-{number}"))
    # then the oldest was let go, the newest kept
    assert get_provider(LlmConfig(kind="scripted", model="m-0")) is not first
    newest = LlmConfig(kind="scripted", model=f"m-{factory.CACHED_PROVIDERS}")
    assert get_provider(newest) is get_provider(newest)
