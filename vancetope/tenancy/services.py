"""Who may see what: the scoping every query goes through, and token authentication."""

from __future__ import annotations

from typing import TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from vancetope.errors import Forbidden, NotFound
from vancetope.infra import fastsql
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
    # Two statements built once (fastsql) instead of the ORM's join, which it compiled anew on
    # every authenticated request (most of a small REST call's time).
    tokens = fastsql.select(ApiToken, "{key_hash} = %s AND {revoked_at} IS NULL", [hash_token(raw)])
    if not tokens:
        return None
    token = tokens[0]
    users = fastsql.select(
        get_user_model(), "{id} = %s AND {is_active} = %s", [token.user_id, True]
    )
    if not users:
        return None
    token.user = users[0]
    # Record use at most once a minute: a busy client must not turn every call into a write.
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token.pk


def authenticate_token_from(client: str, raw: str) -> tuple[AbstractBaseUser, int] | None:
    """`authenticate_token_with_id` for a client at address `client` (`client_address`), which
    may try only so many wrong tokens (VANCETOPE_RATE_TOKEN_FAILURES): past that, a wrong
    token from there is refused with a 429 (RateLimited) until the window has room again. A
    token that verifies is never refused, whatever others sent from the same address (with
    its prefix, which the admin's token list shows, too): the count is of wrong tokens per
    address only. A token carries 256 random bits, so guessing one is not what this stops."""
    found = authenticate_token_with_id(raw)
    if found is None:
        check(TOKEN_FAILURES, client)
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


def visible_project_rows(user: AnyUser) -> list[tuple[int, int | None, int]]:
    """(pk, group id, tenant id) of `visible_projects(user)`, by a statement built once: the ORM
    compiled the query anew on every REST search (the memory reach)."""
    if not user.is_authenticated:
        return []
    statement = fastsql.sql(
        Project,
        "SELECT {id}, {group}, {tenant} FROM {table} WHERE {id} IN ("
        + fastsql.sql(ProjectMembership, "SELECT {project} FROM {table} WHERE {user} = %s")
        + ") OR {tenant} IN ("
        + fastsql.sql(
            TenantMembership, "SELECT {tenant} FROM {table} WHERE {user} = %s AND {role} = %s"
        )
        + ")",
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, [user.pk, user.pk, str(Role.ADMIN)])
        return [(pk, group, tenant) for pk, group, tenant in cursor.fetchall()]


def visible_tenant_ids(user: AnyUser) -> set[int]:
    """The pks of `visible_tenants(user)`, by a statement built once (as above)."""
    if not user.is_authenticated:
        return set()
    statement = fastsql.sql(TenantMembership, "SELECT {tenant} FROM {table} WHERE {user} = %s")
    with connection.cursor() as cursor:
        cursor.execute(statement, [user.pk])
        return {row[0] for row in cursor.fetchall()}


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
