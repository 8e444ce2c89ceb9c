"""Tenants, project groups, projects, memberships and API tokens.

Every query the Brain answers is scoped through these: a user sees only the projects of the
tenants they are a member of.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "vt_"
# How much of a raw token is kept in the clear (`ApiToken.prefix`) to tell tokens apart.
TOKEN_PREFIX_LENGTH = 10


class Tenant(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class ProjectGroup(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="project_groups")
    slug = models.SlugField()
    name = models.CharField(max_length=200)

    class Meta:
        ordering = ["tenant", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "slug"], name="uniq_group_slug_per_tenant")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.slug}"


class Project(models.Model):
    """A project; its public id is `proj_<slug>` (slugs are unique across the Brain)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="projects")
    group = models.ForeignKey(
        ProjectGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="projects"
    )
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.public_id

    @property
    def public_id(self) -> str:
        return self.public_id_of(self.slug)

    @staticmethod
    def public_id_of(slug: str) -> str:
        return f"proj_{slug}"


class Role(models.TextChoices):
    """A role inside a tenant (README "Roles"): on a tenant membership, an admin of the
    tenant (every project of it, its tenant recipes); on a project membership, an admin of
    that project (its project recipes); otherwise a member, who works in the projects they
    are a member of with the recipes the admins made."""

    ADMIN = "admin"
    MEMBER = "member"


class TenantMembership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tenant_memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="uniq_tenant_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class ProjectMembership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="uniq_project_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A bearer token for CLI and machine clients. Only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # The first characters, shown in the admin so a token can be recognised without storing it.
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        verbose_name = "API token"
        verbose_name_plural = "API tokens"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, user: Any, name: str) -> tuple[ApiToken, str]:
        """Create a token and return it with its raw value, which is never stored."""
        token = cls(user=user, name=name)
        raw = token.set_new_key()
        token.save()
        return token, raw

    def set_new_key(self) -> str:
        """Give this (unsaved) token a fresh key; return the raw key, which is never stored."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.prefix, self.key_hash = raw[:TOKEN_PREFIX_LENGTH], hash_token(raw)
        return raw
