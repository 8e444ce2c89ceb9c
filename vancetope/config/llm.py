"""The LLM provider a scope's settings select (the llm.* keys of the cascade), for a process's
turn and for a system client that has no process (the brain linker).

Provider, URL and key are resolved together: a key is sent only to a base URL set at the
key's own scope or a wider one (the environment, the operator's, is the widest). A URL set at
a narrower scope was set by someone who may not set the key (a project admin under a tenant's
key, any tenant under the operator's), so it gets no key: otherwise setting `llm.baseUrl` to a
listener of one's own would hand over the wider scope's key.
"""

from __future__ import annotations

from vancetope.config import keys
from vancetope.config.cascade import DEFAULT, Chain, Effective, Resolved, effective
from vancetope.config.models import CASCADE
from vancetope.llm.factory import LlmConfig
from vancetope.tenancy.models import Project

# How wide each scope is: the narrowest 0, the environment's default the widest.
_WIDTH = {**{str(scope): width for width, scope in enumerate(CASCADE)}, DEFAULT: len(CASCADE)}


def llm_config(cascade: Effective) -> LlmConfig:
    """The provider the resolved settings select, with the key only where it may go."""
    url = cascade[keys.BASE_URL.name]
    key = cascade[keys.API_KEY.name]
    withheld = "" if not key.value or _may_receive(url, key) else _why_withheld(url, key)
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
