"""A tenant with its project, a member user and an API token, and a session opened for it
through the services."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from processes.actions.sessions import create_session
from sessions_app.models import Session
from sessions_app.services import FingerprintData
from vancetope.tenancy.models import (
    ApiToken,
    Project,
    ProjectMembership,
    Role,
    Tenant,
    TenantMembership,
)


class Tenancy:
    """A tenant, its project, a member user and an API token for that user."""

    def __init__(self, slug: str) -> None:
        users = get_user_model()
        self.tenant = Tenant.objects.create(slug=slug, name=f"Tenant {slug}")
        self.project = Project.objects.create(tenant=self.tenant, slug=slug, name=f"Project {slug}")
        self.user = users.objects.create_user(f"user-{slug}", password="pw-" + slug)
        TenantMembership.objects.create(user=self.user, tenant=self.tenant, role=Role.ADMIN)
        ProjectMembership.objects.create(user=self.user, project=self.project)
        _, self.token = ApiToken.issue(self.user, name="test")

    @property
    def project_id(self) -> str:
        return self.project.public_id

    def api(self) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.token}")
        return client


def open_session(tenancy: Tenancy, client_type: str = "cli", *, system: bool = False) -> Session:
    return create_session(
        tenancy.user,
        client_type=client_type,
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        system=system,
    )
