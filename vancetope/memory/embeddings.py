"""Dense embeddings: the offline model of the embedded default, or a configured endpoint.

Why wordllama: its wheel carries the model (a 256-dimension static token embedding, ~33 MB with
the tokenizer), needs numpy and tokenizers only, embeds a thousand sentences in ~30 ms on one
core and never downloads anything (loaded with `disable_download=True`). The alternative that
packs all-MiniLM-L6-v2 needs PyTorch (hundreds of MB) and ~100x the CPU per sentence, for
better quality than a lexical + static-embedding hybrid needs here (docs/memory.md).

Vectors are L2-normalised float32, so cosine similarity is a dot product.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings

log = logging.getLogger(__name__)


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        ...


def normalised(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


class LocalEmbedder:
    """wordllama's model from its own wheel (the package's folder as its cache: the files are
    there; its loader looks for the tokenizer in the wrong sub-folder otherwise)."""

    def __init__(self, dimensions: int) -> None:
        import wordllama

        # Its embeddings are Matryoshka-trained: the first 64, 128 or 256 dimensions are each
        # an embedding of their own (fewer: a faster scan, a little less recall).
        self._model = wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent,
            disable_download=True,
            trunc_dim=dimensions if dimensions < 256 else None,
        )
        self.name = f"wordllama-l2-supercat-{dimensions}"
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:  # the tokenizer is shared between threads
            return normalised(self._model.embed(texts))


class EndpointEmbedder:
    """An OpenAI-compatible /embeddings endpoint through the openai client."""

    def __init__(self, base_url: str, model: str, api_key: str) -> None:
        import openai

        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=60.0)
        self._model = model
        self.name = f"endpoint:{model}"

    def embed(self, texts: list[str]) -> np.ndarray:
        answer = self._client.embeddings.create(model=self._model, input=texts)
        rows = sorted(answer.data, key=lambda row: row.index)
        return normalised(np.array([row.embedding for row in rows], dtype=np.float32))


@lru_cache(maxsize=1)
def _embedder(
    kind: str, base_url: str, model: str, api_key: str, dimensions: int
) -> Embedder | None:
    if kind == "off":
        log.info("memory: dense embeddings off, search is lexical only")
        return None
    if kind == "openai":
        log.info("memory: dense embeddings from the endpoint %s (model %s)", base_url, model)
        return EndpointEmbedder(base_url, model, api_key)
    log.info(
        "memory: dense embeddings from the offline wordllama model (%d dimensions)", dimensions
    )
    return LocalEmbedder(dimensions)


def get_embedder() -> Embedder | None:
    """The configured embedder (None: dense search is off)."""
    return _embedder(
        settings.VANCETOPE_EMBEDDINGS,
        settings.VANCETOPE_EMBEDDINGS_BASE_URL,
        settings.VANCETOPE_EMBEDDINGS_MODEL,
        settings.VANCETOPE_EMBEDDINGS_API_KEY,
        settings.VANCETOPE_EMBEDDINGS_DIMENSIONS,
    )


def reset_embedder() -> None:
    _embedder.cache_clear()
