"""Writing tenant and project recipes (REST /api/recipes): who may (README "Roles"), what a
recipe may name, and which wider recipe it shadows.

Only admins write recipes: a project recipe by an admin of its project or of its tenant, a
tenant recipe by an admin of the tenant. That covers everything a recipe can grant: a
`category: service` recipe, engine `roles` (which open tools such as `tool_health_write`), a
recipe that shadows a bundled one for everyone in its scope. A recipe's tool lists and roles
are checked as the admin's form checks them (recipes_app/tool_names.py).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q

from recipes_app.models import Recipe, RecipeCategory, RecipeScope
from recipes_app.tool_names import roles_problem, tool_list_problem
from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.tenancy.models import Project
from vancetope.tenancy.services import (
    AnyUser,
    get_visible_project,
    require_project_admin,
    require_tenant_admin,
)

# Wider scopes a recipe of each scope can hide.
WIDER = {
    RecipeScope.PROJECT: (RecipeScope.TENANT, RecipeScope.BUNDLED),
    RecipeScope.TENANT: (RecipeScope.BUNDLED,),
    RecipeScope.BUNDLED: (),
}
# The API's names of the fields a write sets, by model field.
API_FIELDS = {
    "engine": "engine",
    "title": "title",
    "description": "description",
    "params": "params",
    "prompt_prefix": "promptPrefix",
    "allowed_tools_add": "allowedToolsAdd",
    "allowed_tools_remove": "allowedToolsRemove",
    "category": "category",
    "roles": "roles",
    "a2a": "a2a",
}
DEFAULTS: dict[str, Any] = {
    "title": "",
    "description": "",
    "params": {},
    "prompt_prefix": "",
    "allowed_tools_add": [],
    "allowed_tools_remove": [],
    "category": RecipeCategory.USER,
    "roles": [],
    "a2a": False,
}


def shadowed_scopes(recipe: Recipe) -> list[str]:
    """The wider scopes whose recipe of the same name this one hides: a project `ford` is
    what every chat in the project runs instead of the bundled `ford`."""
    wider = WIDER[RecipeScope(recipe.scope)]
    if not wider:
        return []
    hidden = Q(scope=RecipeScope.BUNDLED)
    if recipe.scope == RecipeScope.PROJECT:
        tenant_id = recipe.tenant_id or Project.objects.get(pk=recipe.project_id or 0).tenant_id
        hidden |= Q(scope=RecipeScope.TENANT, tenant_id=tenant_id)
    found = set(Recipe.objects.filter(hidden, name=recipe.name).values_list("scope", flat=True))
    return [str(scope) for scope in wider if scope in found]


def recipe_owner(user: AnyUser, scope: Any, project_id: Any) -> dict[str, Any]:
    """Where a written recipe lives, once the caller may write there (403 otherwise; a
    project the caller cannot see is a 404). Bundled recipes come from recipes.yaml only."""
    if scope not in {RecipeScope.TENANT, RecipeScope.PROJECT}:
        raise BadRequest("scope must be 'tenant' or 'project' (bundled recipes are read-only)")
    if not project_id:
        raise BadRequest("projectId is required")
    project = get_visible_project(user, str(project_id))
    if scope == RecipeScope.PROJECT:
        require_project_admin(user, project, "write its project recipes")
        return {"scope": RecipeScope.PROJECT, "project": project, "tenant": project.tenant}
    require_tenant_admin(user, project, "write tenant recipes")
    return {"scope": RecipeScope.TENANT, "tenant": project.tenant, "project": None}


@transaction.atomic
def write_recipe(user: AnyUser, fields: dict[str, Any], *, create: bool) -> Recipe:
    """Create (409 if the name is taken in that scope) or replace (404 if absent) a tenant or
    project recipe. `fields`: the model's fields by name, plus `scope` and `projectId`."""
    owner = recipe_owner(user, fields.get("scope"), fields.get("projectId"))
    name = fields["name"]
    recipe = Recipe.objects.filter(name=name, **owner).first()
    if create and recipe is not None:
        raise Conflict(f"recipe {name!r} already exists in that scope; PUT to change it")
    if not create and recipe is None:
        raise NotFound(f"recipe {name!r} not found in that scope")
    recipe = recipe or Recipe(**owner, name=name)
    for field, default in DEFAULTS.items():
        setattr(recipe, field, fields.get(field, default))
    recipe.engine = fields["engine"]
    _check_names(recipe)
    recipe.full_clean(validate_constraints=False)
    recipe.save()
    return recipe


def delete_recipe(user: AnyUser, name: str, scope: Any, project_id: Any) -> None:
    owner = recipe_owner(user, scope, project_id)
    deleted, _ = Recipe.objects.filter(name=name, **owner).delete()
    if not deleted:
        raise NotFound(f"recipe {name!r} not found in that scope")


def _check_names(recipe: Recipe) -> None:
    """The tools and roles a recipe names must exist: a 400 naming the field."""
    problems = {
        "allowed_tools_add": tool_list_problem(
            recipe.allowed_tools_add, recipe.project, recipe.tenant_id
        ),
        "allowed_tools_remove": tool_list_problem(
            recipe.allowed_tools_remove, recipe.project, recipe.tenant_id
        ),
        "roles": roles_problem(recipe.roles),
    }
    for field, problem in problems.items():
        if problem:
            error = BadRequest(
                f"{API_FIELDS[field]}: {problem}", error="invalid", field=API_FIELDS[field]
            )
            raise error
