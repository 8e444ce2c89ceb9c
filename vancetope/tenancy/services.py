"""Who may see what: the scoping every query goes through, and token authentication."""

from __future__ import annotations

from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from vancetope.errors import Forbidden, NotFound
from vancetope.ratelimit import TOKEN_FAILURES, check, take
from vancetope.tenancy.models import (
    ApiToken,
    Project,
    ProjectMembership,
    Role,
    Tenant,
    TenantMembership,
    hash_token,
)

AnyUser = AbstractBaseUser | AnonymousUser


def authenticate_token(raw: str) -> AbstractBaseUser | None:
    """Return the active user owning this raw API token, or None."""
    found = authenticate_token_with_id(raw)
    return found[0] if found else None


def authenticate_token_with_id(raw: str) -> tuple[AbstractBaseUser, int] | None:
    """The active user owning this raw API token and the token's id (a socket watches it for
    revocation), or None."""
    if not raw:
        return None
    token = (
        ApiToken.objects.active()
        .select_related("user")
        .filter(key_hash=hash_token(raw), user__is_active=True)
        .first()
    )
    if token is None:
        return None
    # Record use at most once a minute: a busy client must not turn every call into a write.
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token.pk


def authenticate_token_from(client: str, raw: str) -> tuple[AbstractBaseUser, int] | None:
    """`authenticate_token_with_id` for a client at address `client`, which may try only so
    many wrong tokens (VANCETOPE_RATE_TOKEN_FAILURES): past that, every attempt from there is
    refused with a 429 (RateLimited), a right token too, until the window has room again."""
    check(TOKEN_FAILURES, client)
    found = authenticate_token_with_id(raw)
    if found is None:
        take(TOKEN_FAILURES, client)
    return found


def revoke_token(token_pk: int) -> ApiToken:
    """Revoke a token: REST calls with it are refused from now on, and sockets opened with it
    close (4401; see revocation.py). Revoking a revoked token changes nothing."""
    token = ApiToken.objects.get(pk=token_pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def visible_tenants(user: AnyUser) -> QuerySet[Tenant]:
    if not user.is_authenticated:
        return Tenant.objects.none()
    return Tenant.objects.filter(memberships__user_id=user.pk).distinct()


def visible_projects(user: AnyUser) -> QuerySet[Project]:
    """Projects the user is a member of, plus every project of tenants they administer."""
    if not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(
        Q(memberships__user_id=user.pk)
        | Q(tenant__memberships__user_id=user.pk, tenant__memberships__role=Role.ADMIN)
    ).distinct()


def get_visible_project(user: AnyUser, public_id: str) -> Project:
    slug = public_id.removeprefix("proj_") if public_id.startswith("proj_") else ""
    project = visible_projects(user).filter(slug=slug).first() if slug else None
    if project is None:
        raise NotFound(f"project {public_id!r} not found")
    return project


M = TypeVar("M", bound=Model)


def in_visible_projects(
    rows: QuerySet[M], user: AnyUser, project: str | None = None
) -> QuerySet[M]:
    """`rows` of the projects the user sees (another tenant's are never seen); with `project`
    (a public id), of that one only: a project the user does not see is a 404."""
    if project:
        return rows.filter(project=get_visible_project(user, project)).select_related("project")
    return rows.filter(project__in=visible_projects(user)).select_related("project")


def is_tenant_admin(user: AnyUser, tenant_id: int) -> bool:
    return bool(user.is_authenticated) and (
        TenantMembership.objects.filter(
            user_id=int(user.pk or 0), tenant_id=tenant_id, role=Role.ADMIN
        ).exists()
    )


def is_project_admin(user: AnyUser, project: Project) -> bool:
    """An admin of the project itself, or of its tenant."""
    if not user.is_authenticated:
        return False
    own = ProjectMembership.objects.filter(
        user_id=int(user.pk or 0), project=project, role=Role.ADMIN
    )
    return own.exists() or is_tenant_admin(user, project.tenant_id)


def require_tenant_admin(user: AnyUser, project: Project, what: str) -> None:
    if not is_tenant_admin(user, project.tenant_id):
        raise Forbidden(f"only admins of tenant {project.tenant.slug!r} {what}")


def require_project_admin(user: AnyUser, project: Project, what: str) -> None:
    if not is_project_admin(user, project):
        raise Forbidden(f"only admins of {project.public_id} or its tenant {what}")
