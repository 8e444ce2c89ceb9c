"""A provider key goes only to a base URL set at the key's scope or a wider one.

The hole this closes: the admin of one project set `llm.baseUrl` to a listener of their own
and chatted, and the listener received the tenant's key (set by the tenant admin at tenant
scope) or, with none, the operator's OPENAI_API_KEY, from any tenant. The listener here is the
OpenAI-compatible stub (the real `openai` client talks to it); it records every header.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.config.helpers import chat, ford_session, put
from tests.support.openai_stub import OpenAIStubServer
from tests.support.tenancy import Tenancy
from vancetope.config.llm import llm_config, project_settings
from vancetope.llm.factory import LlmConfig, get_provider, reset_provider_cache
from vancetope.llm.openai_provider import OpenAICompatibleProvider
from vancetope.tenancy.models import ApiToken, Project, ProjectMembership, Role, TenantMembership

pytestmark = pytest.mark.django_db(transaction=True)

OPERATOR_KEY = "sk-operator-secret"
TENANT_KEY = "sk-tenant-secret"


@pytest.fixture
def operator_llm(settings: Any) -> Iterator[OpenAIStubServer]:
    """The operator's provider: the stub as OPENAI_BASE_URL, with the operator's key."""
    with OpenAIStubServer() as server:
        settings.VANCETOPE_LLM = "openai"
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = OPERATOR_KEY
        settings.VANCETOPE_TURN_RETRY_SECONDS = 0.01
        reset_provider_cache()
        yield server
    reset_provider_cache()


@pytest.fixture
def listener() -> Iterator[OpenAIStubServer]:
    """Somebody's own server, which must never receive a key it was not given."""
    with OpenAIStubServer() as server:
        yield server


def project_admin(tenancy: Tenancy, slug: str) -> tuple[Project, APIClient]:
    """A plain member of `tenancy`'s tenant who administers a project of their own there."""
    project = Project.objects.create(tenant=tenancy.tenant, slug=slug, name=slug)
    user = get_user_model().objects.create_user(f"admin-of-{slug}")
    TenantMembership.objects.create(user=user, tenant=tenancy.tenant, role=Role.MEMBER)
    ProjectMembership.objects.create(user=user, project=project, role=Role.ADMIN)
    _, token = ApiToken.issue(user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return project, client


def put_as(client: APIClient, key: str, project: Project, value: Any) -> Any:
    body = {"scope": "project", "scopeId": project.public_id, "value": value}
    return client.put(f"/api/settings/{key}", body, format="json")


def authorizations(server: OpenAIStubServer) -> list[str]:
    return [request.headers.get("authorization", "") for request in server.recorded]


def test_a_project_admins_url_never_receives_the_tenants_key(
    alice: Tenancy, operator_llm: OpenAIStubServer, listener: OpenAIStubServer
) -> None:
    # given the tenant admin's key at tenant scope, and the admin of another project of the
    # tenant, who may not write tenant settings
    assert put(alice, "llm.apiKey", "tenant", alice.tenant.slug, TENANT_KEY).status_code == 200
    project, client = project_admin(alice, "side")
    assert put_as(client, "llm.apiKey", project, "x").status_code == 200  # their own scope
    assert (
        client.delete(
            f"/api/settings/llm.apiKey?scope=project&scopeId={project.public_id}"
        ).status_code
        == 200
    )
    tenant_write = client.put(
        "/api/settings/llm.apiKey",
        {"scope": "tenant", "scopeId": alice.tenant.slug, "value": "mine"},
        format="json",
    )
    assert tenant_write.status_code == 403
    # when they point their project at their own listener and chat there
    assert put_as(client, "llm.baseUrl", project, listener.base_url).status_code == 200
    session = ford_session(alice, project)
    assert chat(session, "hello") == "echo: hello"
    # then the listener was asked, but received neither the tenant's key nor the operator's
    assert len(listener.completions) == 1
    assert not any(TENANT_KEY in header for header in authorizations(listener))
    assert not any(OPERATOR_KEY in header for header in authorizations(listener))
    # and the tenant's own projects still send the tenant's key to the operator's URL
    home = ford_session(alice)
    assert chat(home, "hi") == "echo: hi"
    assert authorizations(operator_llm)[-1] == f"Bearer {TENANT_KEY}"


def test_no_tenant_receives_the_operators_key_at_a_url_of_its_own(
    alice: Tenancy, bob: Tenancy, operator_llm: OpenAIStubServer, listener: OpenAIStubServer
) -> None:
    # given no key in any tenant's settings: the operator's OPENAI_API_KEY is in effect
    # when bob's tenant admin points bob's project at a listener, at project and tenant scope
    assert put(bob, "llm.baseUrl", "project", bob.project_id, listener.base_url).status_code == 200
    chat(ford_session(bob), "one")
    assert put(bob, "llm.baseUrl", "tenant", bob.tenant.slug, listener.base_url).status_code == 200
    assert (
        bob.api()
        .delete(f"/api/settings/llm.baseUrl?scope=project&scopeId={bob.project_id}")
        .status_code
        == 200
    )
    chat(ford_session(bob), "two")
    # then the listener got both calls, with no operator key in any of them
    assert len(listener.completions) == 2
    assert not any(OPERATOR_KEY in header for header in authorizations(listener))
    # and alice, on the operator's URL, still uses the operator's key
    chat(ford_session(alice), "three")
    # (every request: the completion and the asks of the server's window and tokenizer)
    assert set(authorizations(operator_llm)) == {f"Bearer {OPERATOR_KEY}"}


def test_a_key_set_beside_its_url_is_sent_there(
    alice: Tenancy, operator_llm: OpenAIStubServer, listener: OpenAIStubServer
) -> None:
    # given a project admin's own URL and own key at project scope, and a tenant key
    assert put(alice, "llm.apiKey", "tenant", alice.tenant.slug, TENANT_KEY).status_code == 200
    project, client = project_admin(alice, "own")
    assert put_as(client, "llm.baseUrl", project, listener.base_url).status_code == 200
    assert put_as(client, "llm.apiKey", project, "sk-own").status_code == 200
    # when they chat
    chat(ford_session(alice, project), "hello")
    # then their URL got their key
    assert set(authorizations(listener)) == {"Bearer sk-own"}


def test_an_anthropic_url_without_a_key_of_its_scope_blocks_saying_why(
    alice: Tenancy, operator_llm: OpenAIStubServer, listener: OpenAIStubServer, settings: Any
) -> None:
    # given a tenant Anthropic key and a project that points anthropic at its own URL
    settings.ANTHROPIC_API_KEY = ""
    assert put(alice, "llm.apiKey", "tenant", alice.tenant.slug, TENANT_KEY).status_code == 200
    project, client = project_admin(alice, "anth")
    assert put_as(client, "llm.provider", project, "anthropic").status_code == 200
    assert put_as(client, "llm.baseUrl", project, listener.base_url).status_code == 200
    # when the provider is resolved
    config = llm_config(project_settings(project))
    # then no key goes with that URL, and the reason says which key and where to set one
    assert config.api_key == ""
    assert "llm.apiKey from tenant scope is not sent to llm.baseUrl set at project" in (
        config.withheld
    )
    provider = get_provider(config)
    assert "not sent" in provider.describe()


def test_an_operator_allow_list_refuses_other_hosts_on_write_and_on_use(
    alice: Tenancy, operator_llm: OpenAIStubServer, settings: Any
) -> None:
    # given an operator allow-list of one domain
    settings.VANCETOPE_LLM_ALLOWED_HOSTS = [".llm.example"]
    # when a tenant admin sets a URL elsewhere
    refused = put(alice, "llm.baseUrl", "project", alice.project_id, "http://169.254.169.254/v1")
    allowed = put(alice, "llm.baseUrl", "project", alice.project_id, "http://gpu.llm.example/v1")
    # then the write is a 400 naming the key and the host; an allowed host is stored
    assert refused.status_code == 400
    assert "llm.baseUrl" in str(refused.json())
    assert "169.254.169.254" in str(refused.json())
    assert allowed.status_code == 200
    # and a URL stored before the list was set is refused when used, the operator's never
    outside = get_provider(LlmConfig(kind="openai", base_url="http://10.0.0.9:8080/v1"))
    assert "VANCETOPE_LLM_ALLOWED_HOSTS" in outside.describe()
    operators = get_provider(LlmConfig(kind="openai", base_url=operator_llm.base_url))
    assert isinstance(operators, OpenAICompatibleProvider)
