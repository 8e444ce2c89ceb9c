"""REST /api/recipes: bundled, tenant and project recipes in the caller's scope."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from recipes_app.models import Recipe, RecipeScope
from tests.support.tenancy import Tenancy
from vancetope.tenancy.models import ApiToken, ProjectMembership, Role, TenantMembership

pytestmark = pytest.mark.django_db(transaction=True)


def recipe_body(tenancy: Tenancy, **changes: Any) -> dict[str, Any]:
    return {
        "name": "ford-coding",
        "engine": "ford",
        "title": "Frankie",
        "description": "codes",
        "params": {"temperature": 0.2},
        "promptPrefix": "You write code.",
        "scope": "project",
        "projectId": tenancy.project_id,
        **changes,
    }


def names(response) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.json()
    return [(row["name"], row["scope"]) for row in response.json()["results"]]


def member_of(tenancy: Tenancy) -> APIClient:
    """A client for a plain member (not an admin) of the tenant and its project."""
    user = get_user_model().objects.create_user(f"member-{tenancy.tenant.slug}")
    TenantMembership.objects.create(user=user, tenant=tenancy.tenant, role=Role.MEMBER)
    ProjectMembership.objects.create(user=user, project=tenancy.project)
    _, raw = ApiToken.issue(user, name="member")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


def test_list_includes_the_bundled_ford_recipe(alice):
    response = alice.api().get("/api/recipes")
    assert ("ford", "bundled") in names(response)
    ford = next(row for row in response.json()["results"] if row["name"] == "ford")
    assert ford["engine"] == "ford"
    assert ford["promptPrefix"].startswith("You are Ford")
    assert (ford["tenant"], ford["projectId"]) == (None, None)


def test_recipes_need_a_token(alice):
    response = APIClient().get("/api/recipes")
    assert response.status_code == 401


def test_a_project_recipe_is_created_and_listed(alice):
    api = alice.api()
    # when
    response = api.post("/api/recipes", recipe_body(alice), format="json")
    # then
    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("rcp_")
    assert (body["name"], body["scope"], body["projectId"], body["tenant"]) == (
        "ford-coding",
        "project",
        "proj_alice",
        "alice",
    )
    assert body["params"] == {"temperature": 0.2}
    assert body["category"] == "user"
    stored = Recipe.objects.get(name="ford-coding")
    assert (stored.scope, stored.project, stored.prompt_prefix) == (
        RecipeScope.PROJECT,
        alice.project,
        "You write code.",
    )
    assert ("ford-coding", "project") in names(api.get("/api/recipes"))
    detail = api.get("/api/recipes/ford-coding")
    assert [row["id"] for row in detail.json()["recipes"]] == [body["id"]]


def test_creating_the_same_recipe_twice_is_a_409(alice):
    api = alice.api()
    api.post("/api/recipes", recipe_body(alice), format="json")
    # when
    again = api.post("/api/recipes", recipe_body(alice, title="Again"), format="json")
    # then
    assert again.status_code == 409
    assert again.json()["error"] == "conflict"
    assert "'ford-coding' already exists" in again.json()["message"]
    assert Recipe.objects.get(name="ford-coding").title == "Frankie"


def test_an_unknown_engine_is_a_400_naming_the_field(alice):
    response = alice.api().post(
        "/api/recipes", recipe_body(alice, engine="no-such-engine"), format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "bad-request"
    assert body["message"] == "engine: think engine 'no-such-engine' is not registered"
    assert list(body["fields"]) == ["engine"]
    assert not Recipe.objects.filter(name="ford-coding").exists()


def test_a_name_that_is_not_kebab_case_is_a_400(alice):
    response = alice.api().post(
        "/api/recipes", recipe_body(alice, name="Frankie Coding"), format="json"
    )
    assert response.status_code == 400
    assert "name" in response.json()["fields"]


def test_a_recipe_is_changed_with_put(alice):
    api = alice.api()
    api.post("/api/recipes", recipe_body(alice), format="json")
    # when
    response = api.put(
        "/api/recipes/ford-coding",
        recipe_body(alice, title="Frankie 2", params={"temperature": 0.7}),
        format="json",
    )
    # then
    assert response.status_code == 200
    assert response.json()["title"] == "Frankie 2"
    stored = Recipe.objects.get(name="ford-coding")
    assert (stored.title, stored.params) == ("Frankie 2", {"temperature": 0.7})


def test_put_with_another_name_in_the_body_is_a_400(alice):
    api = alice.api()
    api.post("/api/recipes", recipe_body(alice), format="json")
    response = api.put("/api/recipes/ford-coding", recipe_body(alice, name="other"), format="json")
    assert response.status_code == 400
    assert response.json()["message"] == "the name in the body must match the URL"


def test_put_of_a_recipe_that_does_not_exist_is_a_404(alice):
    response = alice.api().put("/api/recipes/ford-coding", recipe_body(alice), format="json")
    assert response.status_code == 404
    assert not Recipe.objects.filter(name="ford-coding").exists()


def test_a_recipe_is_deleted(alice):
    api = alice.api()
    api.post("/api/recipes", recipe_body(alice), format="json")
    # when
    response = api.delete(f"/api/recipes/ford-coding?projectId={alice.project_id}")
    # then
    assert response.status_code == 204
    assert not Recipe.objects.filter(name="ford-coding").exists()
    assert api.get("/api/recipes/ford-coding").status_code == 404


def test_another_tenant_cannot_see_or_change_a_project_recipe(alice, bob):
    alice.api().post("/api/recipes", recipe_body(alice), format="json")
    api = bob.api()
    # when
    listing = api.get("/api/recipes")
    detail = api.get("/api/recipes/ford-coding")
    put = api.put("/api/recipes/ford-coding", recipe_body(alice, title="mine"), format="json")
    delete = api.delete(f"/api/recipes/ford-coding?projectId={alice.project_id}")
    # then
    assert ("ford-coding", "project") not in names(listing)
    assert detail.status_code == 404
    assert put.status_code == 404
    assert put.json()["message"] == "project 'proj_alice' not found"
    assert delete.status_code == 404
    assert Recipe.objects.get(name="ford-coding").title == "Frankie"


def test_bundled_recipes_cannot_be_changed_or_deleted(alice):
    api = alice.api()
    before = Recipe.objects.get(name="ford", scope=RecipeScope.BUNDLED)
    # when
    put = api.put(
        "/api/recipes/ford", recipe_body(alice, name="ford", scope="bundled"), format="json"
    )
    delete = api.delete(f"/api/recipes/ford?scope=bundled&projectId={alice.project_id}")
    create = api.post(
        "/api/recipes", recipe_body(alice, name="ford", scope="bundled"), format="json"
    )
    # then
    assert put.status_code == 400
    assert "scope" in put.json()["fields"]
    assert delete.status_code == 400
    assert "bundled recipes are read-only" in delete.json()["message"]
    assert create.status_code == 400
    after = Recipe.objects.get(name="ford", scope=RecipeScope.BUNDLED)
    assert (after.pk, after.title, after.prompt_prefix) == (
        before.pk,
        before.title,
        before.prompt_prefix,
    )


def test_a_project_recipe_may_override_a_bundled_one_of_the_same_name(alice):
    api = alice.api()
    # when
    response = api.post(
        "/api/recipes", recipe_body(alice, name="ford", title="Our Ford"), format="json"
    )
    # then
    assert response.status_code == 201
    detail = api.get("/api/recipes/ford").json()["recipes"]
    assert sorted((row["scope"], row["title"]) for row in detail) == [
        ("bundled", "Ford — minimal chat"),
        ("project", "Our Ford"),
    ]


def test_only_tenant_admins_create_tenant_recipes(alice):
    member = member_of(alice)
    # when
    refused = member.post("/api/recipes", recipe_body(alice, scope="tenant"), format="json")
    allowed = alice.api().post("/api/recipes", recipe_body(alice, scope="tenant"), format="json")
    # then
    assert refused.status_code == 403
    assert refused.json()["message"] == "only admins of tenant 'alice' write tenant recipes"
    assert allowed.status_code == 201
    assert (allowed.json()["scope"], allowed.json()["projectId"]) == ("tenant", None)
    assert ("ford-coding", "tenant") in names(member.get("/api/recipes"))


def test_an_unknown_scope_filter_is_a_400_naming_the_parameter(alice):
    response = alice.api().get("/api/recipes", {"scope": "galaxy"})
    assert response.status_code == 400
    assert response.json() == {
        "code": 400,
        "error": "bad-request",
        "message": "scope must be one of bundled, tenant, project",
    }


def test_a_name_no_recipe_can_have_is_a_json_404(alice):
    response = alice.api().get("/api/recipes/Not_Kebab")
    assert response.status_code == 404
    assert response.json()["error"] == "not-found"


def test_unknown_tools_in_a_rest_recipe_are_a_400_naming_the_field(alice):
    api = alice.api()
    # when
    added = api.post(
        "/api/recipes", recipe_body(alice, allowedToolsAdd=["read_file", "no_such"]), format="json"
    )
    removed = api.post(
        "/api/recipes", recipe_body(alice, allowedToolsRemove=["nope_*"]), format="json"
    )
    known = api.post(
        "/api/recipes", recipe_body(alice, allowedToolsAdd=["read_file", "git_*"]), format="json"
    )
    # then the unknown ones are refused as the admin's form refuses them, the known one kept
    assert added.status_code == 400
    assert added.json()["message"].startswith("allowedToolsAdd: unknown tools: no_such; known: ")
    assert removed.status_code == 400
    assert removed.json()["message"].startswith("allowedToolsRemove: unknown tools: nope_*")
    assert known.status_code == 201, known.json()
    assert Recipe.objects.get(name="ford-coding").allowed_tools_add == ["read_file", "git_*"]


def test_unknown_engine_roles_in_a_rest_recipe_are_a_400_naming_the_field(alice):
    response = alice.api().post(
        "/api/recipes", recipe_body(alice, roles=["tool-prober", "root"]), format="json"
    )
    assert response.status_code == 400
    assert response.json()["message"] == (
        "roles: unknown engine roles: root; known: tool-health-writer, tool-prober"
    )
    assert not Recipe.objects.filter(name="ford-coding").exists()


def test_a_recipe_says_which_wider_recipes_it_shadows(alice):
    api = alice.api()
    # given a tenant recipe, and project recipes of its name and of a bundled one's
    tenant_made = api.post("/api/recipes", recipe_body(alice, scope="tenant"), format="json")
    project_made = api.post("/api/recipes", recipe_body(alice), format="json")
    ford = api.post("/api/recipes", recipe_body(alice, name="ford"), format="json")
    # then
    assert tenant_made.json()["shadows"] == []
    assert project_made.json()["shadows"] == ["tenant"]
    assert ford.json()["shadows"] == ["bundled"]
    listed = {(row["name"], row["scope"]): row["shadows"] for row in names_rows(api)}
    assert listed[("ford", "bundled")] == []
    assert listed[("ford", "project")] == ["bundled"]
    assert listed[("ford-coding", "project")] == ["tenant"]


def names_rows(api: APIClient) -> list[dict[str, Any]]:
    return api.get("/api/recipes", {"limit": 200}).json()["results"]
