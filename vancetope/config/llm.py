"""The LLM provider a scope's settings select (the llm.* keys of the cascade), for a process's
turn and for a system client that has no process (the brain linker).

Provider, URL and key are resolved together: a key is sent only to a base URL set at the
key's own scope or a wider one (the environment, the operator's, is the widest). A URL set at
a narrower scope was set by someone who may not set the key (a project admin under a tenant's
key, any tenant under the operator's), so it gets no key: otherwise setting `llm.baseUrl` to a
listener of one's own would hand over the wider scope's key.

Which models the calls may ask for is the admins' choice too (`configured_models`): llm.model,
llm.fallbackModel and llm.models; a param that picks a model names one of them.
"""

from __future__ import annotations

from vancetope.config import keys
from vancetope.config.cascade import DEFAULT, Chain, Effective, Resolved, effective
from vancetope.config.models import CASCADE
from vancetope.errors import BadRequest
from vancetope.llm.factory import LlmConfig
from vancetope.observability import metrics
from vancetope.tenancy.models import Project

# How wide each scope is: the narrowest 0, the environment's default the widest.
_WIDTH = {**{str(scope): width for width, scope in enumerate(CASCADE)}, DEFAULT: len(CASCADE)}


def llm_config(cascade: Effective) -> LlmConfig:
    """The provider the resolved settings select, with the key only where it may go."""
    url = cascade[keys.BASE_URL.name]
    key = cascade[keys.API_KEY.name]
    withheld = "" if not key.value or _may_receive(url, key) else _why_withheld(url, key)
    # The names /metrics may show as a call's model (any other counts as `other`).
    metrics.allow_models(configured_models(cascade))
    return LlmConfig(
        kind=str(cascade.value(keys.PROVIDER.name)),
        model=str(cascade.value(keys.MODEL.name)),
        base_url=str(url.value),
        api_key="" if withheld else str(key.value),
        withheld=withheld,
    )


def _may_receive(url: Resolved, key: Resolved) -> bool:
    # An empty URL is the environment's (or the provider's own), wherever it is set.
    return not url.value or _WIDTH[url.scope] >= _WIDTH[key.scope]


def _where(resolved: Resolved) -> str:
    return "the environment" if resolved.scope == DEFAULT else f"{resolved.scope} scope"


def _why_withheld(url: Resolved, key: Resolved) -> str:
    return (
        f"llm.apiKey from {_where(key)} is not sent to llm.baseUrl set at {_where(url)}: a key "
        f"goes only to a URL set at its own scope or a wider one; set llm.apiKey at "
        f"{_where(url)} as well"
    )


def project_settings(project: Project) -> Effective:
    """Every key as the project sees it (project → group → tenant → default)."""
    return effective(Chain(project.tenant_id, project.group_id, project.pk))


def configured_models(cascade: Effective) -> list[str]:
    """The model names a process of this scope may ask for: llm.model, llm.fallbackModel and
    llm.models, each written by an admin (a member sets the first two for their own session
    only to a name configured above it: vancetope/config/services.py)."""
    found: list[str] = []
    for key in keys.MODEL_KEYS:
        value = cascade.value(key.name)
        for name in value if isinstance(value, list) else [value]:
            if isinstance(name, str) and name and name not in found:
                found.append(name)
    return found


def check_model_choice(cascade: Effective, field: str, value: object) -> None:
    """A model a caller picks (a process param that names one) must be one of the configured
    ones ("" is the configured model itself); otherwise a 400 naming `field`."""
    if value == "":
        return
    configured = configured_models(cascade)
    if isinstance(value, str) and value in configured:
        return
    listed = ", ".join(configured) or "none"
    raise BadRequest.naming(
        field,
        f"{value!r} is not a configured model; configured: {listed} (the settings llm.model, "
        "llm.fallbackModel and llm.models, which admins set)",
    )


def session_settings(project: Project, session_id: int | None) -> Effective:
    """Every key as a session of `project` sees it (session → project → group → tenant)."""
    return effective(Chain(project.tenant_id, project.group_id, project.pk, session_id))
