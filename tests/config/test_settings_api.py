"""REST /api/settings: every key's effective value at a scope with the scope it comes from;
PUT and DELETE per scope, checked (400 naming the key), by role (tenant admins at tenant and
group scope, project admins at project scope, a session's owner at session scope), and another
tenant's scopes a 404. Secrets are write-only."""

from __future__ import annotations

from typing import Any

import pytest

from processes.actions.sessions import create_session
from sessions_app.services import FingerprintData
from tests.support.roles import (
    MEMBER,
    OTHER_PROJECT_ADMIN,
    OUTSIDER,
    PROJECT_ADMIN,
    TENANT_ADMIN,
    Caller,
    caller,
)
from tests.support.tenancy import Tenancy, open_session
from vancetope.config.models import Setting
from vancetope.config.registry import all_keys
from vancetope.tenancy.models import ProjectGroup

pytestmark = pytest.mark.django_db(transaction=True)


def put(api: Any, key: str, scope: str, scope_id: str | None, value: Any) -> Any:
    body: dict[str, Any] = {"scope": scope, "value": value}
    if scope_id is not None:
        body["scopeId"] = scope_id
    return api.put(f"/api/settings/{key}", body, format="json")


def listed(api: Any, scope: str, scope_id: str = "") -> dict[str, dict[str, Any]]:
    answer = api.get(f"/api/settings?scope={scope}&scopeId={scope_id}&limit=500")
    assert answer.status_code == 200, answer.json()
    return {row["key"]: row for row in answer.json()["results"]}


def test_the_list_shows_every_key_with_its_value_and_where_it_comes_from(alice, settings):
    # given a tenant value and a project value, in a group
    settings.VANCETOPE_LLM_MODEL = "env-model"
    group = ProjectGroup.objects.create(tenant=alice.tenant, slug="research", name="Research")
    alice.project.group = group
    alice.project.save(update_fields=["group"])
    api = alice.api()
    assert put(api, "llm.model", "tenant", None, "tenant-model").status_code == 200
    assert put(api, "arthur.maxSteps", "group", "alice/research", 3).status_code == 200
    assert put(api, "llm.fallbackModel", "project", alice.project_id, "small").status_code == 200
    # when alice lists her project's settings
    rows = listed(api, "project", alice.project_id)
    # then every registered key is there, each with the scope that answered
    assert sorted(rows) == sorted(key.name for key in all_keys())
    answered = {key: (row["value"], row["scope"], row["scopeId"]) for key, row in rows.items()}
    assert answered["llm.model"] == ("tenant-model", "tenant", "alice")
    assert answered["arthur.maxSteps"] == (3, "group", "alice/research")
    assert answered["llm.fallbackModel"] == ("small", "project", "proj_alice")
    assert answered["frankie.maxSteps"] == (8, "default", None)
    set_here = {"llm.model", "arthur.maxSteps", "llm.fallbackModel"}
    assert {key for key, row in rows.items() if row["scope"] != "default"} == set_here
    assert rows["arthur.maxSteps"]["type"] == "integer"
    assert rows["arthur.maxSteps"]["namespace"] == "arthur"
    assert rows["llm.provider"]["choices"] == ["scripted", "openai", "anthropic", "local"]
    # and the tenant's own list shows the tenant value but not the narrower ones
    tenant_rows = listed(api, "tenant")
    assert tenant_rows["llm.model"]["scope"] == "tenant"
    assert tenant_rows["llm.fallbackModel"]["scope"] == "default"


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("llm.modle", "x", "llm.modle: not a setting key"),
        ("llm.model", 42, "llm.model: must be a string"),
        ("arthur.maxSteps", "many", "arthur.maxSteps: must be an integer"),
        ("llm.provider", "gemini", "llm.provider: must be one of"),
    ],
)
def test_a_bad_write_is_a_400_naming_the_key_and_stores_nothing(alice, key, value, says):
    # when
    answer = put(alice.api(), key, "project", alice.project_id, value)
    # then
    assert answer.status_code == 400
    assert answer.json()["message"].startswith(says)
    assert not Setting.objects.exists()


def test_a_write_without_a_value_or_with_an_unknown_scope_is_a_400_naming_the_field(alice):
    api = alice.api()
    missing = api.put("/api/settings/llm.model", {"scope": "project"}, format="json")
    assert missing.status_code == 400
    assert "value" in missing.json()["message"]
    scope = put(api, "llm.model", "planet", alice.project_id, "x")
    assert scope.status_code == 400
    assert "scope" in scope.json()["message"]
    listing = api.get("/api/settings?scope=planet")
    assert listing.status_code == 400


def outcome(who: Caller, scope: str, alice: Tenancy) -> int:
    scope_id = "alice" if scope == "tenant" else alice.project_id
    return int(put(who.api, "llm.model", scope, scope_id, f"{scope}-model").status_code)


# What each role gets, writing llm.model at alice's tenant and at her project.
WRITES = {
    TENANT_ADMIN: {"tenant": 200, "project": 200},
    PROJECT_ADMIN: {"tenant": 403, "project": 200},
    OTHER_PROJECT_ADMIN: {"tenant": 403, "project": 404},
    MEMBER: {"tenant": 403, "project": 403},
    OUTSIDER: {"tenant": 404, "project": 404},
}


@pytest.mark.parametrize("role", list(WRITES))
def test_who_may_write_at_tenant_and_project_scope(role, alice, bob):
    # given
    who = caller(role, alice, bob)
    # when / then
    got = {scope: outcome(who, scope, alice) for scope in ("tenant", "project")}
    assert got == WRITES[role]
    # and a refusal stored nothing
    stored = set(Setting.objects.values_list("scope", flat=True))
    assert stored == {scope for scope, code in got.items() if code == 200}


def test_another_tenants_user_can_neither_read_nor_infer_any_scope(alice, bob):
    # given values at alice's tenant, project and session
    session = open_session(alice)
    api = alice.api()
    put(api, "llm.model", "tenant", "alice", "m")
    put(api, "llm.model", "project", alice.project_id, "m")
    put(api, "llm.model", "session", f"sess_{session.pk}", "m")
    # then bob gets the same 404 for each of them as for scopes that do not exist
    for scope, scope_id in [
        ("tenant", "alice"),
        ("project", alice.project_id),
        ("session", f"sess_{session.pk}"),
        ("group", "alice/none"),
    ]:
        read = bob.api().get(f"/api/settings?scope={scope}&scopeId={scope_id}")
        assert read.status_code == 404, (scope, read.json())
        wrote = put(bob.api(), "llm.model", scope, scope_id, "bob")
        assert wrote.status_code == 404
        gone = bob.api().delete(f"/api/settings/llm.model?scope={scope}&scopeId={scope_id}")
        assert gone.status_code == 404
    assert set(Setting.objects.values_list("value", flat=True)) == {"m"}


def test_a_sessions_owner_sets_its_model_but_only_project_admins_set_where_it_connects(alice, bob):
    # given a plain member of alice's project with a session of their own, and the models
    # the project's admin configured
    member = caller(MEMBER, alice, bob)
    session = create_session(
        member.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1"),
    )
    own = f"sess_{session.pk}"
    url = "http://127.0.0.1:1/v1"
    assert put(alice.api(), "llm.models", "project", alice.project_id, ["mine"]).status_code == 200
    # then they set the session's model to a configured one, not its base URL or key
    assert put(member.api, "llm.model", "session", own, "mine").status_code == 200
    assert put(member.api, "llm.fallbackModel", "session", own, "mine").status_code == 200
    assert put(member.api, "llm.baseUrl", "session", own, url).status_code == 403
    assert put(member.api, "llm.apiKey", "session", own, "sk-mine").status_code == 403
    # nor a model the project did not configure, nor the list of models itself
    for key in ("llm.model", "llm.fallbackModel"):
        refused = put(member.api, key, "session", own, "o1-pro-EXPENSIVE-1")
        assert refused.status_code == 403, refused.json()
        assert "'o1-pro-EXPENSIVE-1'" in refused.json()["message"]
        assert "configured: mine" in refused.json()["message"]
    assert put(member.api, "llm.models", "session", own, ["o1-pro"]).status_code == 403
    rows = listed(member.api, "session", own)
    assert (rows["llm.model"]["value"], rows["llm.fallbackModel"]["value"]) == ("mine", "mine")
    assert rows["llm.models"]["value"] == ["mine"]
    # and nobody else's session is theirs to see
    others = open_session(alice)
    assert put(member.api, "llm.model", "session", f"sess_{others.pk}", "x").status_code == 404
    # while an owner who administers the project sets its session's base URL too
    assert put(alice.api(), "llm.baseUrl", "session", f"sess_{others.pk}", url).status_code == 200
    assert put(alice.api(), "llm.model", "session", own, "x").status_code == 404


def test_a_secret_is_write_only(alice):
    # when alice sets the project's API key
    api = alice.api()
    answer = put(api, "llm.apiKey", "project", alice.project_id, "sk-top-secret")
    # then no answer shows it: the reply, the list and the schema'd row all say "***"
    assert answer.status_code == 200
    assert answer.json()["value"] == "***"
    assert answer.json()["secret"] is True
    rows = listed(api, "project", alice.project_id)
    assert rows["llm.apiKey"]["value"] == "***"
    assert rows["llm.apiKey"]["scope"] == "project"
    everything = api.get(f"/api/settings?scope=project&scopeId={alice.project_id}&limit=500")
    assert "sk-top-secret" not in everything.content.decode()
    assert "sk-top-secret" not in answer.content.decode()
    # and with none set, it reads as empty
    unset = api.delete(f"/api/settings/llm.apiKey?scope=project&scopeId={alice.project_id}")
    assert unset.json()["value"] == ""


def test_a_tenant_scope_without_an_id_is_the_callers_tenant(alice):
    # when
    answer = put(alice.api(), "llm.model", "tenant", None, "tenant-model")
    # then
    assert answer.status_code == 200
    assert (answer.json()["scope"], answer.json()["scopeId"]) == ("tenant", "alice")
    assert Setting.objects.get().scope_id == alice.tenant.pk
