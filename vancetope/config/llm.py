"""The LLM provider a scope's settings select (the llm.* keys of the cascade), for a process's
turn and for a system client that has no process (the brain linker)."""

from __future__ import annotations

from vancetope.config import keys
from vancetope.config.cascade import Chain, Effective, effective
from vancetope.llm.factory import LlmConfig
from vancetope.tenancy.models import Project


def llm_config(cascade: Effective) -> LlmConfig:
    """The provider the resolved settings select."""
    return LlmConfig(
        kind=str(cascade.value(keys.PROVIDER.name)),
        model=str(cascade.value(keys.MODEL.name)),
        base_url=str(cascade.value(keys.BASE_URL.name)),
        api_key=str(cascade.value(keys.API_KEY.name)),
    )


def project_settings(project: Project) -> Effective:
    """Every key as the project sees it (project → group → tenant → default)."""
    return effective(Chain(project.tenant_id, project.group_id, project.pk))
