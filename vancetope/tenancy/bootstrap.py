"""First-run setup: a default tenant, project and local user, and a token for local clients."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

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

    written = _ensure_token(user, token_file, name=f"local ({token_file})")
    return Bootstrapped(project, LOCAL_USERNAME, new_password, token_file, written)


def _ensure_token(user: object, token_file: Path, *, name: str) -> bool:
    """Write a new API token of `user` to `token_file` unless it already holds a valid one of
    theirs; whether one was written."""
    existing = token_file.read_text().strip() if token_file.exists() else ""
    if existing and (found := authenticate_token(existing)) is not None and found.pk == user.pk:  # type: ignore[attr-defined]
        return False
    _, raw = ApiToken.issue(user, name=name)  # type: ignore[arg-type]
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token_file.write_text(raw + "\n")
    token_file.chmod(0o600)
    return True


@dataclass(frozen=True)
class Provisioned:
    project: Project
    username: str
    created: list[str]
    token_file: Path
    token_written: bool


def _join(
    membership: type[TenantMembership] | type[ProjectMembership],
    where: dict[str, Any],
    role: str | None,
) -> None:
    """The membership with `role`; without one, a new membership is a member's and an
    existing one keeps its role."""
    if role is None:
        membership.objects.get_or_create(**where, defaults={"role": Role.MEMBER})
    else:
        membership.objects.update_or_create(**where, defaults={"role": role})


def _slug(name: str, what: str) -> str:
    slug = slugify(name)
    if not slug:
        raise ValidationError(f"--{what} {name!r} has no letters or digits to make a slug of")
    return slug


@transaction.atomic
def provision(
    *,
    tenant_name: str,
    username: str,
    token_file: Path,
    project_name: str = "",
    role: str | None = None,
    tenant_role: str | None = None,
) -> Provisioned:
    """A user in a tenant and one of its projects, with `role` in the project and
    `tenant_role` in the tenant, and an API token in `token_file`. Idempotent: an existing
    tenant, project or user is joined, not duplicated, and their roles set where asked; a role
    not given is member for a new membership and kept for an existing one (provisioning a
    tenant admin into another project does not make them a member of the tenant). A project
    name taken by another tenant (slugs are unique across the Brain) is refused."""
    for value, what in ((role, "role"), (tenant_role, "tenant-role")):
        if value is not None and value not in Role.values:
            raise ValidationError(f"--{what} must be one of {', '.join(Role.values)}")
    created: list[str] = []
    tenant, new = Tenant.objects.get_or_create(
        slug=_slug(tenant_name, "tenant"), defaults={"name": tenant_name}
    )
    if new:
        created.append(f"tenant {tenant.slug}")
    slug = _slug(project_name or tenant_name, "project")
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        project = Project.objects.create(tenant=tenant, slug=slug, name=project_name or tenant_name)
        created.append(f"project {project.public_id}")
    elif project.tenant_id != tenant.pk:
        raise ValidationError(
            f"project {project.public_id} belongs to another tenant; choose another --project"
        )
    users = get_user_model()
    user, new = users.objects.get_or_create(username=username)
    if new:
        user.set_unusable_password()  # a machine or scripted user: it signs in with its token
        user.save(update_fields=["password"])
        created.append(f"user {username}")
    _join(TenantMembership, {"user": user, "tenant": tenant}, tenant_role)
    _join(ProjectMembership, {"user": user, "project": project}, role)
    written = _ensure_token(user, token_file, name=f"provisioned ({token_file})")
    return Provisioned(project, username, created, token_file, written)
