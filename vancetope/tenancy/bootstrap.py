"""First-run setup: a default tenant, project and local user, and a token for local clients."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from vancetope.tenancy.models import (
    ApiToken,
    Project,
    ProjectMembership,
    Role,
    Tenant,
    TenantMembership,
)
from vancetope.tenancy.services import authenticate_token

LOCAL_USERNAME = "local"


@dataclass(frozen=True)
class Bootstrapped:
    project: Project
    username: str
    # Set only when the user was created now: the admin login is shown once.
    new_password: str | None
    token_file: Path
    token_written: bool


@transaction.atomic
def bootstrap(token_file: Path) -> Bootstrapped:
    tenant, _ = Tenant.objects.get_or_create(slug="default", defaults={"name": "Default tenant"})
    project, _ = Project.objects.get_or_create(
        slug="default", defaults={"tenant": tenant, "name": "Default project"}
    )
    users = get_user_model()
    user = users.objects.filter(username=LOCAL_USERNAME).first()
    new_password = None
    if user is None:
        new_password = secrets.token_urlsafe(12)
        user = users.objects.create_superuser(LOCAL_USERNAME, "", new_password)
    # The first user administers the tenant and its project (README "Roles inside a tenant").
    TenantMembership.objects.get_or_create(user=user, tenant=tenant, defaults={"role": Role.ADMIN})
    ProjectMembership.objects.get_or_create(
        user=user, project=project, defaults={"role": Role.ADMIN}
    )

    existing = token_file.read_text().strip() if token_file.exists() else ""
    written = False
    if not existing or authenticate_token(existing) is None:
        _, raw = ApiToken.issue(user, name=f"local ({token_file})")
        token_file.parent.mkdir(parents=True, exist_ok=True)
        token_file.write_text(raw + "\n")
        token_file.chmod(0o600)
        written = True
    return Bootstrapped(project, LOCAL_USERNAME, new_password, token_file, written)
