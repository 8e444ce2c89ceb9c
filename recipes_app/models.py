"""Recipes: a named bundle of engine + default params + prompt prefix + tool pool changes."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from protocol.vocabulary import RecipeCategory, RecipeScope
from vancetope.tenancy.models import Project, Tenant

__all__ = ["Recipe", "RecipeCategory", "RecipeScope", "Strategy", "scoped_definition_constraints"]

kebab = RegexValidator(r"^[a-z0-9]+(-[a-z0-9]+)*$", "use lowercase-kebab, e.g. frankie-coding")


def scoped_definition_constraints(kind: str) -> list[models.BaseConstraint]:
    """The constraints of a scoped definition (a recipe, a strategy): its name is unique within
    its scope (bundled, the tenant's, the project's), and its scope matches its owner."""
    return [
        models.UniqueConstraint(
            fields=["name"], condition=Q(scope="bundled"), name=f"uniq_bundled_{kind}_name"
        ),
        models.UniqueConstraint(
            fields=["name", "tenant"], condition=Q(scope="tenant"), name=f"uniq_tenant_{kind}_name"
        ),
        models.UniqueConstraint(
            fields=["name", "project"],
            condition=Q(scope="project"),
            name=f"uniq_project_{kind}_name",
        ),
        models.CheckConstraint(
            condition=(
                Q(scope="bundled", tenant__isnull=True, project__isnull=True)
                | Q(scope="tenant", tenant__isnull=False, project__isnull=True)
                | Q(scope="project", project__isnull=False)
            ),
            name=f"{kind}_scope_matches_owner",
        ),
    ]


class Recipe(models.Model):
    name = models.CharField(max_length=100, validators=[kebab])
    engine = models.CharField(max_length=50)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    params = models.JSONField(default=dict, blank=True)
    prompt_prefix = models.TextField(blank=True)
    allowed_tools_add = models.JSONField(default=list, blank=True)
    allowed_tools_remove = models.JSONField(default=list, blank=True)
    category = models.CharField(
        max_length=16, choices=RecipeCategory.choices, default=RecipeCategory.USER
    )
    roles = models.JSONField(default=list, blank=True)
    # Published as an A2A agent (a2a_face/): an agent card at /a2a/<project>/<name> for the
    # people of every project that sees this recipe (by their API token, as REST).
    a2a = models.BooleanField(default=False)
    scope = models.CharField(max_length=16, choices=RecipeScope.choices)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="recipes"
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="recipes"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "scope"]
        constraints = scoped_definition_constraints("recipe")

    def __str__(self) -> str:
        return f"{self.name} ({self.scope})"

    @property
    def public_id(self) -> str:
        return f"rcp_{self.pk}"

    def snapshot(self) -> dict[str, object]:
        """The copy a process keeps, so later edits of the recipe never change it."""
        return {
            "name": self.name,
            "engine": self.engine,
            "scope": self.scope,
            "title": self.title,
            "params": dict(self.params),
            "promptPrefix": self.prompt_prefix,
            "allowedToolsAdd": list(self.allowed_tools_add),
            "allowedToolsRemove": list(self.allowed_tools_remove),
            "category": self.category,
            "roles": list(self.roles),
        }


class Strategy(models.Model):
    """A vogon strategy: a linear list of phases (recipes_app/strategy.schema.json). Bundled ones
    come from recipes_app/strategies.yaml; a tenant or project strategy of the same name
    overrides them, as recipes do. A process keeps a copy of the one it runs."""

    name = models.CharField(max_length=100, validators=[kebab])
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    phases = models.JSONField(default=list)
    scope = models.CharField(max_length=16, choices=RecipeScope.choices)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="strategies"
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="strategies"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "scope"]
        verbose_name_plural = "strategies"
        constraints = scoped_definition_constraints("strategy")

    def __str__(self) -> str:
        return f"{self.name} ({self.scope})"

    def document(self) -> dict[str, object]:
        """The strategy as its JSON Schema describes it (what is validated and copied)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "phases": list(self.phases),
        }
