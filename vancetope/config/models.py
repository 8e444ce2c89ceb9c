"""Stored setting values, one row per (key, scope, scope id), and the settings revision.

A row's `scope_id` is the primary key of its tenant, project group, project or session;
`tenant` is the tenant it belongs to (every read is scoped by it, and a tenant's deletion takes
its settings along). A secret key's value is stored encrypted (vancetope/config/secrets.py).

The revision is one counter row, raised in the transaction of every write. A lane reads it in
the statement that takes its lease (processes/lane/lease.py), so a worker knows whether its
cached values are current without a statement of its own (vancetope/config/cascade.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from vancetope.tenancy.models import Tenant


class Scope(models.TextChoices):
    """Where a value is set, widest first; a lookup takes the narrowest."""

    TENANT = "tenant"  # every project of the tenant
    GROUP = "group"  # the projects of one project group
    PROJECT = "project"  # one project
    SESSION = "session"  # one session (its processes)


# Narrowest first: the order a lookup tries them.
CASCADE = (Scope.SESSION, Scope.PROJECT, Scope.GROUP, Scope.TENANT)


class Setting(models.Model):
    key = models.CharField(max_length=200)
    scope = models.CharField(max_length=8, choices=Scope.choices)
    scope_id = models.BigIntegerField()
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="settings")
    # The value as JSON; for a secret key, its Fernet ciphertext (a string).
    value = models.JSONField()
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["key", "scope", "scope_id"]
        constraints = [
            models.UniqueConstraint(fields=["key", "scope", "scope_id"], name="uniq_setting_scope")
        ]
        indexes = [models.Index(fields=["scope", "scope_id"], name="setting_scope_idx")]

    def __str__(self) -> str:
        return f"{self.key} at {self.scope} {self.scope_id}"


class SettingsRevision(models.Model):
    """The one row (id 1) whose `revision` every settings write raises."""

    revision = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"settings revision {self.revision}"
