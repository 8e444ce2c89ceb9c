"""The callers of the roles matrices (README "Roles"): a tenant admin, an
admin of the project, an admin of another project of the same tenant, a plain member of the
project and a user of another tenant, each with an API client."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.support.tenancy import Tenancy
from vancetope.tenancy.models import ApiToken, Project, ProjectMembership, Role, TenantMembership

TENANT_ADMIN = "tenant-admin"
PROJECT_ADMIN = "project-admin"
OTHER_PROJECT_ADMIN = "other-project-admin"
MEMBER = "member"
OUTSIDER = "outsider"
ROLES = [TENANT_ADMIN, PROJECT_ADMIN, OTHER_PROJECT_ADMIN, MEMBER, OUTSIDER]


class Caller:
    def __init__(self, user: Any, project: Project) -> None:
        self.user = user
        self.project = project  # a project of their own, for their own processes
        _, raw = ApiToken.issue(user, name="roles")
        self.api = APIClient()
        self.api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")


def caller(role: str, alice: Tenancy, bob: Tenancy) -> Caller:
    """A user in `role` towards alice's tenant and its project proj_alice."""
    if role == TENANT_ADMIN:
        return Caller(alice.user, alice.project)
    if role == OUTSIDER:
        return Caller(bob.user, bob.project)
    user = get_user_model().objects.create_user(f"{role}-user")
    TenantMembership.objects.create(user=user, tenant=alice.tenant, role=Role.MEMBER)
    project = alice.project
    if role == OTHER_PROJECT_ADMIN:
        project = Project.objects.create(tenant=alice.tenant, slug="alice-two", name="Two")
    project_role = Role.MEMBER if role == MEMBER else Role.ADMIN
    ProjectMembership.objects.create(user=user, project=project, role=project_role)
    return Caller(user, project)
