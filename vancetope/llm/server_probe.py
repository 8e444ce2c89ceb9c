"""What an OpenAI-compatible server says of itself beyond the OpenAI API: the context window
it runs a model with, and its tokenizer.

The OpenAI API says nothing of a model's context window or its tokenizer, but the local servers
do, each at an endpoint of its own beside the API: llama.cpp's `/props` and `/tokenize`, Ollama's
`/api/show`, llama-cpp-python's `/extras/tokenize/count`. The OpenAI-compatible provider
(vancetope/llm/openai_provider.py) asks through a ServerProbe once and remembers the answer,
including that there is none.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

import httpx2

# How long one ask of a server's own endpoints (its window, its tokenizer) may take: a server that
# has them answers at once, and the caller is waiting for its call.
PROBE_TIMEOUT = 2.0
# After a server could not be reached, or said it is not ready yet (llama.cpp answers 503 while
# it loads its model), its endpoints are left alone this many seconds: the callers meanwhile get
# None at once instead of each waiting on a connection, and nothing is remembered of it.
RETRY_AFTER = 10.0
# How many texts' token counts a provider remembers. A conversation's messages are counted
# again for every call; with the server's tokenizer each is asked for once.
COUNT_CACHE_SIZE = 4096
# The window Ollama runs a model with when neither the model's parameters nor the request set
# num_ctx (the API sends none). It is a setting of the Ollama server (OLLAMA_CONTEXT_LENGTH;
# older releases default to 2048, newer ones choose by memory, 4096 below 24 GiB of VRAM) that
# no endpoint reports, so this takes the smallest current default: a window guessed too small
# only cuts a prompt short, one guessed too large lets Ollama drop its beginning silently.
OLLAMA_DEFAULT_NUM_CTX = 4096


def server_origin(base_url: str) -> str:
    """Where a server's own endpoints are: its base URL without the API's `/v1`
    (`http://127.0.0.1:8080/v1` → `http://127.0.0.1:8080`)."""
    return base_url.rstrip("/").removesuffix("/v1")


class _NotNow(Exception):
    """The server could not answer now (unreachable, timed out, still loading its model): there
    is no answer to remember, and it is asked again after RETRY_AFTER."""


@dataclass(frozen=True)
class _Tokenizer:
    """A server's tokenize endpoint: its path, the field the text goes in, and how its answer
    gives the count (None where it does not)."""

    path: str
    text_field: str
    read: Callable[[Any], int | None]


def _count_of_tokens(answer: Any) -> int | None:
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    return len(tokens) if isinstance(tokens, list) else None


def _count_of_count(answer: Any) -> int | None:
    count = answer.get("count") if isinstance(answer, dict) else None
    return count if _is_int(count) and count >= 0 else None


# In the order they are tried. llama.cpp's C++ server (llama-server) answers `/tokenize` with
# the tokens; llama-cpp-python's server answers `/extras/tokenize/count` with their number.
TOKENIZERS = (
    _Tokenizer("/tokenize", "content", _count_of_tokens),
    _Tokenizer("/extras/tokenize/count", "input", _count_of_count),
)
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


class ServerProbe:
    """What an OpenAI-compatible server says of itself beyond the OpenAI API: the context window
    it runs a model with, and its tokenizer. One per provider, so a changed setting (a new
    provider from the factory) asks again.

    Every answer is remembered: a window per model (None too: a server that does not say is not
    asked again), which tokenizer endpoint the server has (or that it has none: then no request
    at all), and the counts of the last COUNT_CACHE_SIZE texts. Only "not now" is not
    remembered (_NotNow). Nothing here raises: whatever goes wrong is an answer of None, and the
    caller falls back to the `llm.contextWindow` setting, the table of well-known models, or its
    estimate. Safe from any thread."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.origin = server_origin(base_url)
        self._api_key = api_key
        self._client_lock = threading.Lock()
        self._kept_client: httpx2.Client | None = None
        # time.monotonic() before which the server is not asked (RETRY_AFTER).
        self._quiet_until = 0.0
        # Held while a window is asked for, so threads that need it at once ask only once.
        self._window_lock = threading.Lock()
        self._windows: dict[str, int | None] = {}
        self._tokenizer_lock = threading.Lock()
        self._tokenizer_known = False
        self._tokenizer: _Tokenizer | None = None
        self._counts_lock = threading.Lock()
        # Keyed by a digest of the text rather than the text: 4096 tool results kept whole
        # would hold on to megabytes of conversations long gone.
        self._counts: OrderedDict[bytes, int] = OrderedDict()

    def window(self, model: str) -> int | None:
        """The context window the server runs `model` with, or None where it does not say."""
        with self._window_lock:
            if model in self._windows:
                return self._windows[model]
            try:
                window = self._llama_cpp_window() or self._ollama_window(model)
            except _NotNow:
                return None
            self._windows[model] = window
            return window

    def count(self, text: str) -> int | None:
        """How many tokens `text` is for the server's tokenizer, or None without one."""
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._counts_lock:
            known = self._counts.get(key)
            if known is not None:
                self._counts.move_to_end(key)
                return known
        try:
            count = self._count(text)
        except _NotNow:
            return None
        if count is not None:
            with self._counts_lock:
                self._counts[key] = count
                self._counts.move_to_end(key)
                if len(self._counts) > COUNT_CACHE_SIZE:
                    self._counts.popitem(last=False)
        return count

    def _count(self, text: str) -> int | None:
        with self._tokenizer_lock:
            if not self._tokenizer_known:
                # The endpoint is found with the first text to count: the one that answers
                # has counted it.
                for tokenizer in TOKENIZERS:
                    count = self._tokenize(tokenizer, text)
                    if count is not None:
                        self._tokenizer = tokenizer
                        self._tokenizer_known = True
                        return count
                self._tokenizer_known = True
                return None
            known = self._tokenizer
        # Outside the lock: counts of a known tokenizer go to the server side by side.
        return None if known is None else self._tokenize(known, text)

    def _tokenize(self, tokenizer: _Tokenizer, text: str) -> int | None:
        return tokenizer.read(self._ask("POST", tokenizer.path, {tokenizer.text_field: text}))

    def _llama_cpp_window(self) -> int | None:
        """llama.cpp's server: `n_ctx` of its slots' settings (a slot's share of the context
        when it runs several), or at the top of `/props` in older builds."""
        props = self._ask("GET", "/props")
        if not isinstance(props, dict):
            return None
        settings = props.get("default_generation_settings")
        in_settings = settings.get("n_ctx") if isinstance(settings, dict) else None
        return _positive(in_settings) or _positive(props.get("n_ctx"))

    def _ollama_window(self, model: str) -> int | None:
        """Ollama: the window it runs the model with. A `num_ctx` of the model's parameters
        sets it, cut to the length the model was trained for (Ollama cuts it so, with a
        warning); without one, Ollama's default (OLLAMA_DEFAULT_NUM_CTX) applies, or the trained
        length where that is smaller."""
        shown = self._ask("POST", "/api/show", {"model": model})
        if not isinstance(shown, dict):
            return None
        trained = _trained_length(shown.get("model_info"))
        parameters = shown.get("parameters")
        found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
        num_ctx = _positive(int(found.group(1))) if found else None
        if num_ctx is not None:
            return min(num_ctx, trained) if trained is not None else num_ctx
        return None if trained is None else min(trained, OLLAMA_DEFAULT_NUM_CTX)

    def _ask(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        """The JSON the server answers at `path` of its origin, or None for any other answer
        (an error status, 404 above all: no such endpoint; a body that is not JSON). Raises
        _NotNow when it could not answer: unreachable, timed out, or 503."""
        if time.monotonic() < self._quiet_until:
            raise _NotNow
        try:
            response = self._client().request(method, self.origin + path, json=payload)
        except httpx2.TransportError as error:
            self._quiet_until = time.monotonic() + RETRY_AFTER
            raise _NotNow from error
        except (httpx2.HTTPError, httpx2.InvalidURL, ValueError):
            # A malformed answer or URL, or a text that cannot be sent (lone surrogates).
            return None
        if response.status_code == 503:
            self._quiet_until = time.monotonic() + RETRY_AFTER
            raise _NotNow
        if response.status_code != 200:
            return None
        try:
            return response.json()
        except ValueError:
            return None

    def _client(self) -> httpx2.Client:
        """One kept client, like the provider's SDK client: counting each message must not
        build an SSL context each time. The key goes as the SDK sends it (Bearer): a server
        that checks keys (llama-server --api-key) checks these endpoints too."""
        with self._client_lock:
            if self._kept_client is None:
                self._kept_client = httpx2.Client(
                    timeout=PROBE_TIMEOUT,
                    headers={"Authorization": f"Bearer {self._api_key}"},
                )
            return self._kept_client


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive(value: Any) -> int | None:
    return value if _is_int(value) and value > 0 else None


def _trained_length(model_info: Any) -> int | None:
    """The context length a model was trained for, from Ollama's `model_info`: the key
    `<architecture>.context_length` (`llama.context_length`)."""
    if not isinstance(model_info, dict):
        return None
    architecture = model_info.get("general.architecture")
    if isinstance(architecture, str):
        length = _positive(model_info.get(f"{architecture}.context_length"))
        if length is not None:
            return length
    lengths = (_positive(v) for k, v in model_info.items() if str(k).endswith(".context_length"))
    return next((length for length in lengths if length is not None), None)
