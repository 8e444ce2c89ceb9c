"""The roles matrix of the README ("Roles"), every cell through REST.

Columns: a tenant admin, an admin of the project, an admin of another project of the same
tenant, a plain member of the project, a user of another tenant. Each cell names what the
role gets; a refusal (403, or 404 where the project is not theirs to see) changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from processes.actions.create import create_process
from processes.actions.sessions import create_session, system_session
from processes.models import ThinkProcess
from recipes_app.models import Recipe, RecipeCategory, RecipeScope
from sessions_app.services import FingerprintData
from tests.support.roles import (
    MEMBER,
    OTHER_PROJECT_ADMIN,
    OUTSIDER,
    PROJECT_ADMIN,
    ROLES,
    TENANT_ADMIN,
    Caller,
    caller,
)
from tests.support.tenancy import Tenancy
from vancetope.tenancy.bootstrap import bootstrap
from vancetope.tenancy.models import ProjectMembership, Role, TenantMembership

pytestmark = pytest.mark.django_db(transaction=True)


def body(alice: Tenancy, **changes: Any) -> dict[str, Any]:
    return {
        "name": "house-style",
        "engine": "ford",
        "title": "House style",
        "promptPrefix": "Answer in our house style.",
        "scope": "project",
        "projectId": alice.project_id,
        **changes,
    }


def stored(**where: Any) -> list[tuple[str, str, str]]:
    rows = Recipe.objects.filter(**where).order_by("pk")
    return [(row.name, row.scope, row.title) for row in rows]


def tenant_body(who: Caller, alice: Tenancy, **changes: Any) -> dict[str, Any]:
    """A tenant recipe of alice's tenant, named through a project of it the caller is in (the
    outsider names proj_alice, which it cannot see)."""
    in_tenant = who.project.tenant_id == alice.tenant.pk
    project_id = who.project.public_id if in_tenant else alice.project_id
    return body(alice, scope="tenant", projectId=project_id, **changes)


def existing(alice: Tenancy, scope: str) -> Recipe:
    """A recipe an admin made earlier, in `scope` of alice's tenant."""
    return Recipe.objects.create(
        name="house-style",
        engine="ford",
        title="Before",
        scope=scope,
        tenant=alice.tenant,
        project=alice.project if scope == RecipeScope.PROJECT else None,
    )


# Each write, by role: the answer's status. Admins of the project (of it or of its tenant)
# write project recipes; only tenant admins write tenant recipes; a project the caller is no
# member of is not found.
PROJECT_WRITE = {
    TENANT_ADMIN: 2,
    PROJECT_ADMIN: 2,
    OTHER_PROJECT_ADMIN: 404,
    MEMBER: 403,
    OUTSIDER: 404,
}
TENANT_WRITE = {
    TENANT_ADMIN: 2,
    PROJECT_ADMIN: 403,
    OTHER_PROJECT_ADMIN: 403,
    MEMBER: 403,
    OUTSIDER: 404,
}


def assert_answer(response: Any, expected: int) -> None:
    if expected == 2:
        assert response.status_code in {200, 201, 204}, response.content
    else:
        assert response.status_code == expected, response.content
        assert response.json()["code"] == expected


# --- recipes: read --------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_reading_recipes(role, alice, bob):
    existing(alice, RecipeScope.PROJECT)
    Recipe.objects.create(
        name="tenant-style", engine="ford", scope=RecipeScope.TENANT, tenant=alice.tenant
    )
    who = caller(role, alice, bob)
    # when
    listing = who.api.get("/api/recipes", {"limit": 200})
    detail = who.api.get("/api/recipes/house-style")
    # then every role reads the bundled recipes, and the project's where it is a member
    assert listing.status_code == 200
    rows = {(row["name"], row["scope"]) for row in listing.json()["results"]}
    assert ("ford", "bundled") in rows
    sees_project = role in {TENANT_ADMIN, PROJECT_ADMIN, MEMBER}
    assert (("house-style", "project") in rows) is sees_project
    assert detail.status_code == (200 if sees_project else 404)
    # and the tenant's recipes wherever it is in the tenant (an admin of another project too)
    assert (("tenant-style", "tenant") in rows) is (role != OUTSIDER)


# --- recipes: project recipes ----------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_creating_a_project_recipe(role, alice, bob):
    who = caller(role, alice, bob)
    # when
    response = who.api.post("/api/recipes", body(alice), format="json")
    # then
    assert_answer(response, PROJECT_WRITE[role])
    expected = [("house-style", "project", "House style")] if PROJECT_WRITE[role] == 2 else []
    assert stored(name="house-style") == expected


@pytest.mark.parametrize("role", ROLES)
def test_changing_a_project_recipe(role, alice, bob):
    existing(alice, RecipeScope.PROJECT)
    who = caller(role, alice, bob)
    # when
    response = who.api.put("/api/recipes/house-style", body(alice, title="After"), format="json")
    # then
    assert_answer(response, PROJECT_WRITE[role])
    title = "After" if PROJECT_WRITE[role] == 2 else "Before"
    assert stored(name="house-style") == [("house-style", "project", title)]


@pytest.mark.parametrize("role", ROLES)
def test_deleting_a_project_recipe(role, alice, bob):
    existing(alice, RecipeScope.PROJECT)
    who = caller(role, alice, bob)
    # when
    response = who.api.delete(f"/api/recipes/house-style?projectId={alice.project_id}")
    # then
    assert_answer(response, PROJECT_WRITE[role])
    left = [] if PROJECT_WRITE[role] == 2 else [("house-style", "project", "Before")]
    assert stored(name="house-style") == left


# --- recipes: tenant recipes -----------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_creating_a_tenant_recipe(role, alice, bob):
    who = caller(role, alice, bob)
    # when
    response = who.api.post("/api/recipes", tenant_body(who, alice), format="json")
    # then
    assert_answer(response, TENANT_WRITE[role])
    expected = [("house-style", "tenant", "House style")] if TENANT_WRITE[role] == 2 else []
    assert stored(name="house-style") == expected


@pytest.mark.parametrize("role", ROLES)
def test_changing_a_tenant_recipe(role, alice, bob):
    existing(alice, RecipeScope.TENANT)
    who = caller(role, alice, bob)
    # when
    response = who.api.put(
        "/api/recipes/house-style", tenant_body(who, alice, title="After"), format="json"
    )
    # then
    assert_answer(response, TENANT_WRITE[role])
    title = "After" if TENANT_WRITE[role] == 2 else "Before"
    assert stored(name="house-style") == [("house-style", "tenant", title)]


@pytest.mark.parametrize("role", ROLES)
def test_deleting_a_tenant_recipe(role, alice, bob):
    existing(alice, RecipeScope.TENANT)
    who = caller(role, alice, bob)
    # when
    project_id = tenant_body(who, alice)["projectId"]
    response = who.api.delete(f"/api/recipes/house-style?scope=tenant&projectId={project_id}")
    # then
    assert_answer(response, TENANT_WRITE[role])
    left = [] if TENANT_WRITE[role] == 2 else [("house-style", "tenant", "Before")]
    assert stored(name="house-style") == left


# --- recipes: what a recipe can grant ---------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_creating_a_service_category_recipe(role, alice, bob):
    who = caller(role, alice, bob)
    # when
    response = who.api.post("/api/recipes", body(alice, category="service"), format="json")
    # then
    assert_answer(response, PROJECT_WRITE[role])
    made = Recipe.objects.filter(name="house-style", category=RecipeCategory.SERVICE).exists()
    assert made is (PROJECT_WRITE[role] == 2)


@pytest.mark.parametrize("role", ROLES)
def test_granting_engine_roles_on_a_recipe(role, alice, bob):
    who = caller(role, alice, bob)
    # when: the roles that let agrajag's tools write ToolHealth rows
    response = who.api.post(
        "/api/recipes",
        body(alice, category="service", roles=["tool-prober", "tool-health-writer"]),
        format="json",
    )
    # then
    assert_answer(response, PROJECT_WRITE[role])
    granted = list(Recipe.objects.filter(name="house-style").values_list("roles", flat=True))
    assert granted == ([["tool-prober", "tool-health-writer"]] if PROJECT_WRITE[role] == 2 else [])


@pytest.mark.parametrize("role", ROLES)
def test_shadowing_a_bundled_recipe(role, alice, bob):
    who = caller(role, alice, bob)
    # when a project recipe named like the bundled chat recipe is written
    response = who.api.post("/api/recipes", body(alice, name="ford"), format="json")
    # then only an admin may, and the recipe says what it shadows
    assert_answer(response, PROJECT_WRITE[role])
    if PROJECT_WRITE[role] == 2:
        assert response.json()["shadows"] == ["bundled"]
        listed = alice.api().get("/api/recipes/ford").json()["recipes"]
        assert sorted((row["scope"], row["shadows"]) for row in listed) == [
            ("bundled", []),
            ("project", ["bundled"]),
        ]
    else:
        assert list(Recipe.objects.filter(name="ford").values_list("scope", flat=True)) == [
            "bundled"
        ]


# --- processes: everyone sees and stops their own, nobody another's ---------------------------


def own_service_process(who: Caller) -> ThinkProcess:
    Recipe.objects.get_or_create(
        name="sweeper",
        scope=RecipeScope.PROJECT,
        project=who.project,
        defaults={"engine": "ford", "category": RecipeCategory.SERVICE, "tenant": None},
    )
    session = create_session(
        who.user,
        client_type="cli",
        project_id=who.project.public_id,
        fingerprint=FingerprintData(machine_id="m-roles"),
    )
    return create_process(session, goal="sweep", recipe="sweeper", start=False)


@pytest.mark.parametrize("role", ROLES)
def test_listing_own_processes_service_ones_too(role, alice, bob):
    who = caller(role, alice, bob)
    service = own_service_process(who)
    # when
    listing = who.api.get("/api/processes", {"limit": 200})
    services = who.api.get("/api/processes", {"limit": 200, "category": "service"})
    detail = who.api.get(f"/api/processes/{service.public_id}")
    # then it is theirs, listed under the service filter, not in the ordinary list
    assert service.public_id not in [row["id"] for row in listing.json()["results"]]
    assert service.public_id in [row["id"] for row in services.json()["results"]]
    assert detail.status_code == 200


@pytest.mark.parametrize("role", ROLES)
def test_stopping_an_own_service_process(role, alice, bob):
    who = caller(role, alice, bob)
    service = own_service_process(who)
    # when
    response = who.api.post(f"/api/processes/{service.public_id}/stop")
    # then
    assert response.status_code == 200, response.content
    service.refresh_from_db()
    assert (service.status, service.close_reason) == ("CLOSED", "STOPPED")


@pytest.mark.parametrize("role", ROLES)
def test_another_users_process_is_not_found_whatever_the_role(role, alice, bob):
    who = caller(role, alice, bob)
    # given a process of another member of proj_alice, and one of the system (agrajag's kind)
    other = get_user_model().objects.create_user("someone-else")
    ProjectMembership.objects.create(user=other, project=alice.project)
    theirs = own_service_process(Caller(other, alice.project))
    system = create_process(
        system_session(alice.project, "agrajag"), goal="x", recipe="ford", start=False
    )
    for process in (theirs, system):
        # when
        listing = who.api.get("/api/processes", {"limit": 200})
        detail = who.api.get(f"/api/processes/{process.public_id}")
        stop = who.api.post(f"/api/processes/{process.public_id}/stop")
        # then
        assert process.public_id not in [row["id"] for row in listing.json()["results"]]
        assert (detail.status_code, stop.status_code) == (404, 404)
        process.refresh_from_db()
        assert process.status == "INIT"


def test_the_bootstrap_user_administers_the_default_tenant_and_project(recipes, tmp_path):
    # given a first run
    done = bootstrap(tmp_path / "token")
    token = (tmp_path / "token").read_text().strip()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    user = get_user_model().objects.get(username=done.username)
    # then the local user is admin of both, and so writes project and tenant recipes
    assert TenantMembership.objects.get(user=user).role == Role.ADMIN
    assert ProjectMembership.objects.get(user=user, project=done.project).role == Role.ADMIN
    for scope in ("project", "tenant"):
        made = api.post(
            "/api/recipes",
            {"name": "mine", "engine": "ford", "scope": scope, "projectId": "proj_default"},
            format="json",
        )
        assert made.status_code == 201, made.json()
