"""The Brain's own setting keys: the LLM provider, model, base URL and API key.

Their defaults are today's environment settings (VANCETOPE_LLM, VANCETOPE_LLM_MODEL,
OPENAI_BASE_URL / ANTHROPIC_BASE_URL, OPENAI_API_KEY / ANTHROPIC_API_KEY,
VANCETOPE_LLM_FALLBACK_MODEL), read when a value is resolved, so a Brain with no stored setting
behaves exactly as the environment says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from vancetope.config.registry import SettingKey, SettingType, register
from vancetope.llm.factory import check_allowed_url, environment_key, environment_url

PROVIDERS = ("scripted", "openai", "anthropic", "local")


def _provider(resolved: Mapping[str, Any]) -> str:
    return str(settings.VANCETOPE_LLM)


def _base_url(resolved: Mapping[str, Any]) -> str:
    """The environment's base URL of the provider in effect."""
    return environment_url(str(resolved.get(PROVIDER.name, settings.VANCETOPE_LLM)))


def _api_key(resolved: Mapping[str, Any]) -> str:
    """The environment's key of the provider in effect (vancetope/config/llm.py sends it only
    with the environment's URL)."""
    return environment_key(str(resolved.get(PROVIDER.name, settings.VANCETOPE_LLM)))


def _http_url(value: str) -> str:
    if not value:
        return ""  # empty: the provider's own default
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"must be an http:// or https:// URL, not {value!r}"
    # The provider kind does not matter here: a URL the environment names for either provider
    # is the operator's, so the URL is allowed when either provider's check allows it.
    problems = [check_allowed_url(value, kind) for kind in ("openai", "anthropic")]
    return "" if "" in problems else problems[0]


PROVIDER = register(
    SettingKey(
        name="llm.provider",
        type=SettingType.STRING,
        default=_provider,
        description="The LLM provider: scripted (offline), openai (any OpenAI-compatible "
        "server), anthropic, or local (a GGUF model in the Brain's process, the `local` "
        "extra; VANCETOPE_LOCAL_MODEL). Default: VANCETOPE_LLM.",
        choices=PROVIDERS,
        operator=True,
    )
)
MODEL = register(
    SettingKey(
        name="llm.model",
        type=SettingType.STRING,
        default=lambda resolved: str(settings.VANCETOPE_LLM_MODEL),
        description="The model every LLM call asks for; empty: the provider's default. "
        "Default: VANCETOPE_LLM_MODEL.",
    )
)
BASE_URL = register(
    SettingKey(
        name="llm.baseUrl",
        type=SettingType.STRING,
        default=_base_url,
        description="The provider's base URL (an OpenAI-compatible server's, e.g. "
        "http://127.0.0.1:11434/v1); empty: the provider's own. Default: OPENAI_BASE_URL or "
        "ANTHROPIC_BASE_URL, by provider.",
        operator=True,
        check=_http_url,
    )
)
API_KEY = register(
    SettingKey(
        name="llm.apiKey",
        type=SettingType.STRING,
        default=_api_key,
        description="The provider's API key (write-only). Default: OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY, by provider.",
        secret=True,
        operator=True,
    )
)
FALLBACK_MODEL = register(
    SettingKey(
        name="llm.fallbackModel",
        type=SettingType.STRING,
        default=lambda resolved: str(settings.VANCETOPE_LLM_FALLBACK_MODEL),
        description="The model a step may fall back to when its call fails (zaphod's "
        "synthesizer); empty: none. Default: VANCETOPE_LLM_FALLBACK_MODEL.",
    )
)

# The most names llm.models may list (each may be a label value of /metrics).
MAX_MODELS = 32


def _model_names(value: list[Any]) -> str:
    if len(value) > MAX_MODELS:
        return f"at most {MAX_MODELS} model names, not {len(value)}"
    for index, name in enumerate(value):
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            return f"[{index}] must be a model name (a non-empty string), not {name!r}"
    return ""


MODELS = register(
    SettingKey(
        name="llm.models",
        type=SettingType.ARRAY,
        default=lambda resolved: [],
        description="Other models a process's params may name (zaphod's synthesizerModel and "
        "fallbackModel), besides llm.model and llm.fallbackModel: a param naming any other "
        "model is refused. A member may set llm.model or llm.fallbackModel for their own "
        "session only to one of these names. Default: none.",
        operator=True,
        check=_model_names,
    )
)
# The keys whose values name a model the Brain asks its provider for.
MODEL_KEYS = (MODEL, FALLBACK_MODEL, MODELS)


def _at_least(low: int) -> Any:
    def check(value: int) -> str:
        return "" if value >= low else f"must be at least {low}, not {value!r}"

    return check


CONTEXT_WINDOW = register(
    SettingKey(
        name="llm.contextWindow",
        type=SettingType.INTEGER,
        default=lambda resolved: int(settings.VANCETOPE_LLM_CONTEXT_WINDOW),
        description="The model's context window in tokens, for a server that does not say "
        "(llama.cpp's C++ server and Ollama do, and win; the local provider's is "
        "VANCETOPE_LOCAL_CONTEXT); 0: the table of well-known hosted models, else unbounded. "
        "Every LLM call is assembled within it. Default: VANCETOPE_LLM_CONTEXT_WINDOW.",
        check=_at_least(0),
    )
)

MODEL_SIZE = register(
    SettingKey(
        name="llm.modelSize",
        type=SettingType.STRING,
        default="auto",
        description="small: the model is offered the engines' minimal structured-output "
        "schemas (marvin's plan of kind, title and goal only), which a small model can fill; "
        "large: the full ones; auto: small for the well-known small models (SmolLM2, the "
        "shipped local model), large for any other.",
        check=lambda value: (
            ""
            if value in ("auto", "small", "large")
            else f"must be auto, small or large, not {value!r}"
        ),
    )
)

RECALL = register(
    SettingKey(
        name="llm.recall",
        type=SettingType.BOOLEAN,
        default=True,
        description="Whether a compaction writes the turns it folds to the session's memory "
        "and the calls of a compacted conversation get the earlier turns most relevant to "
        "the message they answer (docs/engines.md, Recall). Off: the summary alone stands "
        "for the folded turns, and nothing of the conversation is written to memory.",
    )
)

# --- the brain linker (vancetope/memory/linker.py, docs/memory.md) ------------------------------


def _fraction(value: float) -> str:
    return "" if 0.0 <= value <= 1.0 else f"must be between 0 and 1, not {value!r}"


LINKER_THRESHOLD = register(
    SettingKey(
        name="linker.contradictionThreshold",
        type=SettingType.NUMBER,
        default=0.8,
        description="The brain linker's confidence at or above which a `contradicts` verdict "
        "invalidates the older item; below it the verdict goes to the job owner's inbox as an "
        "APPROVAL.",
        check=_fraction,
    )
)
LINKER_NEIGHBOURS = register(
    SettingKey(
        name="linker.neighbours",
        type=SettingType.INTEGER,
        default=3,
        description="How many nearest neighbours on the same subject the brain linker pairs "
        "each recent item with (never the whole graph).",
        check=_at_least(1),
    )
)
LINKER_MIN_SIMILARITY = register(
    SettingKey(
        name="linker.minSimilarity",
        type=SettingType.NUMBER,
        # The offline wordllama model scores two statements on one subject in other words
        # about 0.3-0.5 ("Deploys happen on Friday afternoons" / "We never deploy on
        # Fridays": 0.33) and unrelated ones under 0.1; the neighbours' count bounds the rest.
        default=0.3,
        description="The cosine similarity (of the items' vectors, or of their word sets when "
        "an item has no vector) above which a neighbour with another key counts as on the same "
        "subject; an item of the same key always does.",
        check=_fraction,
    )
)
LINKER_WINDOW_HOURS = register(
    SettingKey(
        name="linker.windowHours",
        type=SettingType.INTEGER,
        default=24,
        description="The items the brain linker looks at when the project has no earlier "
        "completed linker run: those created in the last this many hours.",
        check=_at_least(1),
    )
)
LINKER_MAX_LLM_CALLS = register(
    SettingKey(
        name="linker.maxLlmCalls",
        type=SettingType.INTEGER,
        default=50,
        description="The brain linker's LLM calls per run when its cron action names no "
        "maxLlmCalls.",
        check=_at_least(1),
    )
)
