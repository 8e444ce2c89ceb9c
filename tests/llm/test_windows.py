"""The table of well-known hosted models' context windows, for servers that do not say theirs."""

from __future__ import annotations

import pytest

from vancetope.llm.windows import known_window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4.1-nano", 1_047_576),
        ("gpt-4-turbo", 128_000),
        ("gpt-4-turbo-2024-04-09", 128_000),
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-4-32k", 32_768),
        ("gpt-3.5-turbo", 16_385),
        ("o1", 200_000),
        ("o1-mini", 128_000),
        ("o3", 200_000),
        ("o3-mini", 200_000),
        ("o4-mini", 200_000),
        ("gpt-5", 400_000),
        ("gpt-5-mini", 400_000),
        ("gpt-5-chat-latest", 128_000),
        ("claude-sonnet-4-6", 200_000),
        ("claude-3-5-haiku-20241022", 200_000),
        ("SmolLM2-135M-Instruct", 2_048),
        ("smollm2:135m", 2_048),
    ],
)
def test_a_well_known_model_has_its_vendors_window(model: str, window: int) -> None:
    assert known_window(model) == window


def test_the_longest_matching_prefix_wins() -> None:
    # given names that also start with a shorter known name ("gpt-4", "o1", "gpt-5")
    names = ["gpt-4.1-mini", "gpt-4o-mini", "gpt-4-turbo", "o1-preview", "gpt-5-chat-latest"]

    # when
    windows = [known_window(name) for name in names]

    # then
    assert windows == [1_047_576, 128_000, 128_000, 128_000, 128_000]


def test_a_routers_provider_prefix_and_case_do_not_matter() -> None:
    assert known_window("openai/gpt-4o") == 128_000
    assert known_window("anthropic/Claude-Opus-4-1") == 200_000
    assert known_window(" GPT-4O-MINI ") == 128_000


@pytest.mark.parametrize("model", ["", "llama3.2", "qwen2.5:7b", "mistral-large", "gpt", "o2"])
def test_a_model_not_in_the_table_has_no_window(model: str) -> None:
    assert known_window(model) is None
