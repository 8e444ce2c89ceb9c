"""The scope cascade: the narrowest scope that sets a key answers (session → project → group
→ tenant → the key's default), says which it was, and unsetting it shows the wider one again;
and what of it an engine's ctx.settings holds."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet

from engines.registry import get_engine
from processes.lane.context_builder import engine_settings
from processes.models import ThinkProcess
from tests.config.helpers import set_value, unset_value
from tests.support.tenancy import Tenancy, open_session
from vancetope.config.cascade import Chain, effective, forget_cached, session_values
from vancetope.config.llm import llm_config
from vancetope.config.models import Scope, Setting
from vancetope.tenancy.models import ProjectGroup

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def grouped(alice: Tenancy) -> Tenancy:
    """alice's project in a project group."""
    group = ProjectGroup.objects.create(tenant=alice.tenant, slug="research", name="Research")
    alice.project.group = group
    alice.project.save(update_fields=["group"])
    return alice


def chain_of(tenancy: Tenancy, session_id: int | None = None) -> Chain:
    project = tenancy.project
    return Chain(project.tenant_id, project.group_id, project.pk, session_id)


def source(found: Any, name: str) -> tuple[Any, str]:
    return found[name].value, found[name].scope


def test_the_narrowest_scope_answers_and_unsetting_it_shows_the_wider_one(grouped, settings):
    # given llm.model set at every scope of alice's session
    settings.VANCETOPE_LLM_MODEL = "env-model"
    session = open_session(grouped)
    project = grouped.project
    set_value("llm.model", Scope.TENANT, grouped.tenant, "tenant-model")
    set_value("llm.model", Scope.GROUP, project.group, "group-model")
    set_value("llm.model", Scope.PROJECT, project, "project-model")
    set_value("llm.model", Scope.SESSION, session, "session-model")
    chain = chain_of(grouped, session.pk)
    # then the session's answers, and says so
    assert source(effective(chain), "llm.model") == ("session-model", "session")
    # when each narrower one is unset, the next wider one answers
    expected = [
        (Scope.SESSION, session, ("project-model", "project")),
        (Scope.PROJECT, project, ("group-model", "group")),
        (Scope.GROUP, project.group, ("tenant-model", "tenant")),
        (Scope.TENANT, grouped.tenant, ("env-model", "default")),
    ]
    for scope, row, answer in expected:
        unset_value("llm.model", scope, row)
        assert source(effective(chain), "llm.model") == answer


def test_another_tenants_values_never_reach_a_session(alice, bob):
    # given bob's tenant and project set a model, alice's nothing
    set_value("llm.model", Scope.TENANT, bob.tenant, "bob-tenant-model")
    set_value("llm.model", Scope.PROJECT, bob.project, "bob-project-model")
    session = open_session(alice)
    # then alice's session and project see only the default
    assert source(effective(chain_of(alice, session.pk)), "llm.model")[1] == "default"
    forget_cached()
    assert session_values(session.pk, revision=2)["llm.model"].scope == "default"


def test_the_lane_reads_a_sessions_values_once_per_revision(alice, django_assert_num_queries):
    # given a value at alice's project, and a worker that has not read it yet
    session = open_session(alice)
    set_value("arthur.maxSteps", Scope.PROJECT, alice.project, 2)
    forget_cached()
    # when the lane asks twice at the same revision
    with django_assert_num_queries(1):
        first = session_values(session.pk, revision=1)
    with django_assert_num_queries(0):
        again = session_values(session.pk, revision=1)
    # then both answer the project's value; a new revision reads again
    assert first["arthur.maxSteps"].value == again["arthur.maxSteps"].value == 2
    set_value("arthur.maxSteps", Scope.PROJECT, alice.project, 4)
    with django_assert_num_queries(1):
        assert session_values(session.pk, revision=2)["arthur.maxSteps"].value == 4


def test_revision_zero_means_nothing_is_stored_and_reads_nothing(alice, django_assert_num_queries):
    session = open_session(alice)
    with django_assert_num_queries(0):
        found = session_values(session.pk, revision=0)
    assert all(resolved.scope == "default" for resolved in found.values())


def test_an_engines_settings_hold_its_namespace_unprefixed_under_recipe_and_process_params(
    alice,
):
    # given arthur's maxSteps and outputTextMinChars set at alice's project, a model too
    session = open_session(alice)
    set_value("arthur.maxSteps", Scope.PROJECT, alice.project, 2)
    set_value("arthur.outputTextMinChars", Scope.PROJECT, alice.project, 80)
    set_value("frankie.maxSteps", Scope.PROJECT, alice.project, 1)
    set_value("llm.model", Scope.PROJECT, alice.project, "big-model")
    set_value("llm.apiKey", Scope.PROJECT, alice.project, "sk-project")
    process = ThinkProcess.objects.get(pk=session.chat_process_id)
    process.engine_params = {"outputTextMinChars": 10}
    engine = get_engine("arthur")
    assert engine is not None
    # when the lane builds arthur's settings
    cascade = session_values(session.pk, revision=5)
    found = engine_settings(engine, process, cascade)
    # then its own keys come unprefixed, the process's params win, other engines' keys and
    # secrets are absent, and the Brain's other keys are there by their full names
    assert found["maxSteps"] == 2
    assert found["outputTextMinChars"] == 10
    assert found["llm.model"] == "big-model"
    assert "llm.apiKey" not in found
    assert "frankie.maxSteps" not in found
    assert not any("sk-project" == value for value in found.values())
    # and the provider's configuration has the secret in clear
    assert llm_config(cascade).api_key == "sk-project"
    assert llm_config(cascade).model == "big-model"


def test_a_secret_is_stored_encrypted(alice):
    # when
    set_value("llm.apiKey", Scope.TENANT, alice.tenant, "sk-very-secret")
    # then the row does not hold it in clear, and the cascade does
    row = Setting.objects.get(key="llm.apiKey")
    assert "sk-very-secret" not in str(row.value)
    assert effective(Chain(alice.tenant.pk))["llm.apiKey"].value == "sk-very-secret"


def test_a_secret_no_key_decrypts_falls_back_to_the_wider_scope(alice, settings):
    # given a project key stored under a settings key that is later replaced
    set_value("llm.apiKey", Scope.PROJECT, alice.project, "sk-old")
    settings.OPENAI_API_KEY = "sk-env"
    settings.VANCETOPE_LLM = "openai"
    settings.VANCETOPE_SETTINGS_KEY = Fernet.generate_key().decode()
    # then the environment's key applies
    found = effective(chain_of(alice))["llm.apiKey"]
    assert (found.value, found.scope) == ("sk-env", "default")


def test_the_defaults_are_the_environments_by_provider(alice, settings):
    # given an anthropic environment
    settings.VANCETOPE_LLM = "anthropic"
    settings.ANTHROPIC_BASE_URL = "http://127.0.0.1:9/anthropic"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    # then the base URL default is anthropic's; switched to openai at the project, openai's
    assert effective(chain_of(alice))["llm.baseUrl"].value == "http://127.0.0.1:9/anthropic"
    set_value("llm.provider", Scope.PROJECT, alice.project, "openai")
    found = effective(chain_of(alice))
    assert found["llm.provider"].value == "openai"
    assert found["llm.baseUrl"].value == "http://127.0.0.1:9/v1"


def test_a_deleted_project_or_session_takes_its_settings_along(alice):
    # given values at alice's project, a session of it, and her tenant
    session = open_session(alice)
    set_value("llm.model", Scope.TENANT, alice.tenant, "tenant-model")
    set_value("llm.model", Scope.PROJECT, alice.project, "project-model")
    set_value("llm.model", Scope.SESSION, session, "session-model")
    # when the session goes, then the project
    session.delete()
    assert sorted(Setting.objects.values_list("scope", flat=True)) == ["project", "tenant"]
    alice.project.delete()
    # then only the tenant's is left
    assert list(Setting.objects.values_list("scope", flat=True)) == ["tenant"]
