"""The registry of typed setting keys: every write is checked against its key's type, and the
refusal names the key."""

from __future__ import annotations

import pytest

from engines.registry import all_engines
from vancetope.config import registry
from vancetope.config.registry import (
    SettingKey,
    SettingRefused,
    SettingType,
    all_keys,
    engine_keys,
    get_key,
    register,
    type_of,
)


def test_an_unknown_key_is_refused_naming_it():
    # when / then
    with pytest.raises(SettingRefused) as refused:
        get_key("llm.modle")
    assert refused.value.code == 400
    assert refused.value.message.startswith("llm.modle: not a setting key")


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("llm.model", 4, "llm.model: must be a string, not int 4"),
        ("arthur.maxSteps", "6", "arthur.maxSteps: must be an integer, not str '6'"),
        ("arthur.maxSteps", True, "arthur.maxSteps: must be an integer, not bool True"),
        ("arthur.maxSteps", None, "arthur.maxSteps: a value is required (an integer)"),
        ("llm.provider", "gemini", "llm.provider: must be one of scripted, openai, anthropic"),
        ("llm.baseUrl", "ftp://x", "llm.baseUrl: must be an http:// or https:// URL"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_key(name, value, says):
    # given
    key = get_key(name)
    # when / then
    with pytest.raises(SettingRefused) as refused:
        key.validate(value)
    assert refused.value.message.startswith(says)


def test_a_well_typed_value_is_kept():
    assert get_key("llm.model").validate("gpt-4o") == "gpt-4o"
    assert get_key("arthur.maxSteps").validate(3) == 3
    assert get_key("llm.baseUrl").validate("") == ""


def test_every_engine_describes_only_defaults_it_has_and_they_are_keys_of_its_namespace():
    # given the engines registered at startup
    for engine in all_engines():
        # then each described default is a key of the engine's namespace, typed by its default
        keys = {key.short_name: key for key in engine_keys(engine.name)}
        assert set(keys) == set(engine.setting_descriptions)
        for short_name, key in keys.items():
            assert key.type == type_of(engine.default_settings[short_name])
            assert key.default == engine.default_settings[short_name]
            assert key.engine
            assert key.namespace == engine.name
            assert not key.secret


def test_the_llm_keys_are_registered_and_only_the_api_key_is_secret():
    llm = {key.name: key for key in all_keys() if key.namespace == "llm"}
    assert set(llm) == {
        "llm.provider",
        "llm.model",
        "llm.baseUrl",
        "llm.apiKey",
        "llm.fallbackModel",
        "llm.models",
        "llm.contextWindow",
        "llm.recall",
        "llm.modelSize",
    }
    assert [name for name, key in llm.items() if key.secret] == ["llm.apiKey"]


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys registered by a test are gone after it."""
    monkeypatch.setattr(registry, "_keys", dict(registry._keys))
    monkeypatch.setattr(registry, "_by_engine", {})


def test_a_second_different_key_of_the_same_name_is_refused(scratch_registry):
    # given
    register(SettingKey("testing.colour", SettingType.STRING, "red", "a colour"))
    # when / then: the same key again is fine, another of that name is not
    register(SettingKey("testing.colour", SettingType.STRING, "red", "a colour"))
    with pytest.raises(ValueError, match="registered twice"):
        register(SettingKey("testing.colour", SettingType.INTEGER, 1, "a number"))


def test_a_key_whose_default_has_the_wrong_type_is_refused(scratch_registry):
    with pytest.raises(SettingRefused, match="testing.size: must be an integer"):
        register(SettingKey("testing.size", SettingType.INTEGER, "big", "a size"))
