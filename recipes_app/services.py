"""Loading bundled recipes and resolving a recipe for a spawn."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml
from django.db import transaction
from django.db.models import Model, Q, QuerySet

from recipes_app.models import Recipe, RecipeCategory, RecipeScope
from vancetope.errors import BadRequest, NotFound
from vancetope.infra import fastsql
from vancetope.tenancy.models import Project

BUNDLED_RECIPES = Path(__file__).with_name("recipes.yaml")
RECIPE_FIELDS = {
    "name",
    "engine",
    "title",
    "description",
    "params",
    "prompt_prefix",
    "allowed_tools_add",
    "allowed_tools_remove",
    "category",
    "roles",
    "a2a",
}
SCOPE_RANK = {RecipeScope.PROJECT: 0, RecipeScope.TENANT: 1, RecipeScope.BUNDLED: 2}


@functools.lru_cache(maxsize=8)
def _parsed(path: Path, mtime_ns: int) -> Any:
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def read_bundled_yaml(path: Path) -> Any:
    """A bundled YAML file's content, parsed once per version of the file: the bundled rows
    are synced at every bootstrap and start, and in tests before most tests."""
    return copy.deepcopy(_parsed(path, path.stat().st_mtime_ns))


def sync_bundled_rows(model: type[Model], rows: dict[str, dict[str, Any]]) -> int:
    """Make `model`'s bundled rows equal to `rows` (name: fields) in a few statements: one
    read, one INSERT of the new, an UPDATE of each changed row and one DELETE of the gone.
    A field an entry leaves out keeps its value, as update_or_create's defaults would."""
    stored = {row.name: row for row in model.objects.filter(scope=RecipeScope.BUNDLED)}  # type: ignore[attr-defined]
    new = []
    for name, fields in rows.items():
        row = stored.pop(name, None)
        if row is None:
            new.append(model(scope=RecipeScope.BUNDLED, name=name, **fields))
        elif any(getattr(row, field) != value for field, value in fields.items()):
            for field, value in fields.items():
                setattr(row, field, value)
            row.save()
    model.objects.bulk_create(new)  # type: ignore[attr-defined]
    if stored:
        model.objects.filter(pk__in=[row.pk for row in stored.values()]).delete()  # type: ignore[attr-defined]
    return len(rows)


def read_bundled_recipes(path: Path = BUNDLED_RECIPES) -> list[dict[str, Any]]:
    entries = read_bundled_yaml(path) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of recipes")
    for index, entry in enumerate(entries):
        unknown = set(entry) - RECIPE_FIELDS
        if unknown:
            raise ValueError(f"{path}: recipe #{index} has unknown keys {sorted(unknown)}")
        if entry.get("category", RecipeCategory.USER) not in RecipeCategory.values:
            raise ValueError(f"{path}: recipe #{index} has an unknown category")
    return entries


@transaction.atomic
def sync_bundled_recipes(path: Path = BUNDLED_RECIPES) -> int:
    """Make the bundled rows equal to recipes.yaml (idempotent); return how many there are."""
    rows = {
        entry["name"]: {"params": {}, **{key: v for key, v in entry.items() if key != "name"}}
        for entry in read_bundled_recipes(path)
    }
    return sync_bundled_rows(Recipe, rows)


def in_scope_of(project: Project) -> Q:
    """The rows of a scoped definition (a recipe, a strategy) seen from this project: the
    bundled ones, its tenant's and its own."""
    return (
        Q(scope=RecipeScope.BUNDLED)
        | Q(scope=RecipeScope.TENANT, tenant_id=project.tenant_id)
        | Q(scope=RecipeScope.PROJECT, project=project)
    )


def recipes_in_scope(project: Project) -> QuerySet[Recipe]:
    """Every recipe row a spawn in this project could resolve to (all scopes)."""
    return Recipe.objects.filter(in_scope_of(project))


def effective_recipes(project: Project) -> list[Recipe]:
    """One recipe per name, the narrowest scope winning (project < tenant < bundled)."""
    best: dict[str, Recipe] = {}
    for recipe in recipes_in_scope(project):
        current = best.get(recipe.name)
        if (
            current is None
            or SCOPE_RANK[RecipeScope(recipe.scope)] < SCOPE_RANK[RecipeScope(current.scope)]
        ):
            best[recipe.name] = recipe
    return sorted(best.values(), key=lambda recipe: recipe.name)


def resolve_recipe(project: Project, *, recipe: str | None, engine: str | None) -> Recipe:
    """The recipe for a spawn: named explicitly, or by the engine-name convention."""
    name = recipe or engine
    if not name:
        raise BadRequest("name a recipe or a thinkEngine")
    # `recipes_in_scope` with the name, as one prepared statement: a parent's turn resolves
    # the recipe of every child it spawns.
    rows = fastsql.select(
        Recipe,
        "{name} = %s AND ({scope} = %s OR ({scope} = %s AND {tenant} = %s) "
        "OR ({scope} = %s AND {project} = %s))",
        [
            name,
            RecipeScope.BUNDLED,
            RecipeScope.TENANT,
            project.tenant_id,
            RecipeScope.PROJECT,
            project.pk,
        ],
    )
    candidates = sorted(rows, key=lambda row: SCOPE_RANK[RecipeScope(row.scope)])
    if not candidates:
        what = "recipe" if recipe else "no recipe for think engine"
        raise NotFound(f"{what} {name!r} in project {project.public_id}")
    chosen = candidates[0]
    if recipe and engine and chosen.engine != engine:
        raise BadRequest(
            f"recipe {recipe!r} runs engine {chosen.engine!r}, not the requested {engine!r}"
        )
    return chosen
