"""`manage.py bootstrap --tenant NAME --user NAME [--project NAME] [--role …] --token-file PATH`:
an operator scripts a second tenant, a project admin or a plain member without the admin UI.
Idempotent: an existing tenant or project is joined, never duplicated."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from vancetope.tenancy.models import Project, ProjectMembership, Role, Tenant, TenantMembership
from vancetope.tenancy.services import authenticate_token

pytestmark = pytest.mark.django_db


def run(*arguments: str) -> str:
    out = StringIO()
    call_command("bootstrap", *arguments, stdout=out)
    return out.getvalue()


def test_provisioning_makes_a_tenant_project_and_member_with_a_working_token(
    tmp_path: Path,
) -> None:
    # given a Brain with nothing but what bootstrap always makes
    token = tmp_path / "ana.token"
    # when an operator provisions a member of a new tenant
    printed = run(
        "--tenant", "Acme", "--user", "ana", "--project", "Research", "--token-file", str(token)
    )
    # then the project's public id is printed, the memberships are as asked, the token works
    assert "project: proj_research" in printed
    project = Project.objects.get(slug="research")
    assert project.tenant.slug == "acme"
    member = ProjectMembership.objects.get(project=project, user__username="ana")
    assert member.role == Role.MEMBER
    assert TenantMembership.objects.get(user__username="ana").role == Role.MEMBER
    user = authenticate_token(token.read_text().strip())
    assert user is not None
    assert user.get_username() == "ana"
    assert not user.has_usable_password()


def test_provisioning_again_joins_what_exists_and_sets_the_role_asked(tmp_path: Path) -> None:
    # given ana provisioned as a member
    token = tmp_path / "ana.token"
    run("--tenant", "Acme", "--user", "ana", "--token-file", str(token))
    first_token = token.read_text()
    # when she is provisioned again as the project's admin, and bo joins the same project
    again = run("--tenant", "Acme", "--user", "ana", "--role", "admin", "--token-file", str(token))
    run("--tenant", "Acme", "--user", "bo", "--token-file", str(tmp_path / "bo.token"))
    # then nothing is duplicated, her role is admin, her valid token is kept
    assert "created: nothing (all existed)" in again
    assert "already valid" in again
    assert token.read_text() == first_token
    assert Tenant.objects.filter(slug="acme").count() == 1
    project = Project.objects.get(slug="acme")
    roles = dict(
        ProjectMembership.objects.filter(project=project).values_list("user__username", "role")
    )
    assert roles == {"ana": Role.ADMIN, "bo": Role.MEMBER}


def test_a_project_of_another_tenant_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    # given a project "research" in tenant Acme
    run(
        "--tenant",
        "Acme",
        "--user",
        "ana",
        "--project",
        "Research",
        "--token-file",
        str(tmp_path / "a"),
    )
    # when another tenant names the same project
    with pytest.raises(CommandError, match="proj_research belongs to another tenant"):
        run(
            "--tenant",
            "Globex",
            "--user",
            "gil",
            "--project",
            "Research",
            "--token-file",
            str(tmp_path / "g"),
        )
    # then the refused run left no tenant, user or token behind
    assert not Tenant.objects.filter(slug="globex").exists()
    assert not TenantMembership.objects.filter(user__username="gil").exists()
    assert not (tmp_path / "g").exists()


def test_tenant_without_user_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--tenant and --user go together"):
        run("--tenant", "Acme", "--token-file", str(tmp_path / "t"))


def test_provisioning_without_a_role_keeps_the_role_a_membership_has(tmp_path: Path) -> None:
    # given ana, admin of the tenant Acme
    token = str(tmp_path / "ana.token")
    run("--tenant", "Acme", "--user", "ana", "--tenant-role", "admin", "--token-file", token)
    # when she is provisioned into a second project of the tenant, naming no role
    printed = run("--tenant", "Acme", "--user", "ana", "--project", "Two", "--token-file", token)
    # then she is still the tenant's admin, and a member of the new project
    assert "project: proj_two" in printed
    assert TenantMembership.objects.get(user__username="ana").role == Role.ADMIN
    two = ProjectMembership.objects.get(project__slug="two", user__username="ana")
    assert two.role == Role.MEMBER
