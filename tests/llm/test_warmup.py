"""The local model's warm-up in a child process (vancetope/llm/warmup.py): a library that
crashes there is one line naming the signal and the reinstall, and this process lives on. The
warm-up of the real model is in test_local_provider.py (it needs the `local` extra)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pytest_django import Settings

from tests.support.crashing_llama import crashing_llama_cpp
from vancetope.llm.local_model import LocalModelProblem
from vancetope.llm.local_provider import LocalProvider
from vancetope.llm.scripted import ScriptedProvider
from vancetope.llm.warmup import warm_up, warm_up_provider

REINSTALL = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-binary llama-cpp-python --no-cache-dir '
    "--force-reinstall llama-cpp-python"
)


def kills_itself(signal_name: str) -> str:
    return f"import os, signal; os.kill(os.getpid(), signal.{signal_name})"


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


@pytest.fixture
def crashing_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Children of this process import the llama_cpp that crashes its first completion."""
    folder = crashing_llama_cpp(tmp_path / "lib")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))
    )


@pytest.mark.parametrize("signal_name", ["SIGSEGV", "SIGILL"])
def test_a_child_that_crashes_with_a_signal_is_one_line_naming_it_and_the_fix(
    model_file: Path, signal_name: str
) -> None:
    with pytest.raises(LocalModelProblem) as problem:
        warm_up(model_file, 512, code=kills_itself(signal_name))

    assert str(problem.value) == (
        f"the local model crashed its warm-up ({signal_name}): llama-cpp-python was built for "
        f"another CPU; reinstall it from source: {REINSTALL}"
    )


@pytest.mark.usefixtures("crashing_library")
def test_the_warm_up_completes_with_the_library_and_reports_its_crash(model_file: Path) -> None:
    # when: the real warm-up code, with a llama_cpp whose first completion dies of SIGSEGV
    with pytest.raises(LocalModelProblem) as problem:
        warm_up(model_file, 512)
    # then: the crash was the child's; this process is here to read it
    message = str(problem.value)
    assert message.startswith("the local model crashed its warm-up (SIGSEGV): ")
    assert message.endswith(REINSTALL)
    assert "\n" not in message


def test_another_signal_is_not_blamed_on_the_cpu(model_file: Path) -> None:
    with pytest.raises(LocalModelProblem) as problem:
        warm_up(model_file, 512, code=kills_itself("SIGKILL"))

    assert str(problem.value) == "the local model's warm-up was killed (SIGKILL)"


def test_a_child_that_fails_is_one_line_with_its_last_error(model_file: Path) -> None:
    code = "import sys; raise ValueError(f'Failed to load model from file: {sys.argv[1]}')"

    with pytest.raises(LocalModelProblem) as problem:
        warm_up(model_file, 512, code=code)

    assert str(problem.value) == (
        "the local model failed its warm-up (exit 1): "
        f"ValueError: Failed to load model from file: {model_file}"
    )


def test_a_child_that_does_not_finish_is_stopped(model_file: Path) -> None:
    with pytest.raises(LocalModelProblem) as problem:
        warm_up(model_file, 512, code="import time; time.sleep(60)", timeout=1)

    assert str(problem.value) == (
        f"the local model {model_file} did not finish its warm-up in 1 s; "
        "VANCETOPE_LOCAL_WARMUP=false skips it"
    )


def test_a_child_that_passes_is_no_problem(model_file: Path) -> None:
    # the child gets the model file and the context as its arguments
    code = f"import sys; assert sys.argv[1:] == [{str(model_file)!r}, '512'], sys.argv"

    warm_up(model_file, 512, code=code)  # raises LocalModelProblem if the child failed


@pytest.mark.usefixtures("crashing_library")
def test_the_local_provider_is_warmed_up_unless_the_setting_is_off(
    settings: Settings, model_file: Path
) -> None:
    provider = LocalProvider(model_path=model_file, context_tokens=512)
    settings.VANCETOPE_LOCAL_WARMUP = True
    with pytest.raises(
        LocalModelProblem, match=r"^the local model crashed its warm-up \(SIGSEGV\)"
    ):
        warm_up_provider(provider)
    # when
    settings.VANCETOPE_LOCAL_WARMUP = False
    # then: no child, no crash
    warm_up_provider(provider)


@pytest.mark.usefixtures("crashing_library")
def test_other_providers_have_no_warm_up(settings: Settings) -> None:
    settings.VANCETOPE_LOCAL_WARMUP = True

    # a warm-up would raise: every child here imports the crashing library
    warm_up_provider(ScriptedProvider(None))
