from __future__ import annotations

from typing import Any

import yaml
from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from engines.registry import all_engines, get_engine
from recipes_app.models import Recipe, RecipeScope, Strategy
from recipes_app.strategies import StrategyInvalid, check_strategy
from recipes_app.tool_names import roles_problem, tool_list_problem
from recipes_app.writes import shadowed_scopes

TOOL_LISTS = ("allowed_tools_add", "allowed_tools_remove")


class RecipeForm(forms.ModelForm):
    class Meta:
        model = Recipe
        fields = [
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
            "scope",
            "tenant",
            "project",
        ]

    def clean_engine(self) -> str:
        engine = self.cleaned_data["engine"]
        if get_engine(engine) is None:
            known = ", ".join(e.name for e in all_engines())
            raise forms.ValidationError(f"unknown think engine {engine!r}; registered: {known}")
        return engine

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        project = cleaned.get("project")
        tenant = cleaned.get("tenant")
        for field in TOOL_LISTS:
            problem = tool_list_problem(cleaned.get(field), project, tenant.pk if tenant else None)
            if problem:
                self.add_error(field, problem)
        if problem := roles_problem(cleaned.get("roles")):
            self.add_error("roles", problem)
        return cleaned

    def clean_scope(self) -> str:
        scope = self.cleaned_data["scope"]
        if scope == RecipeScope.BUNDLED:
            # The loader makes bundled rows equal to recipes.yaml at every start.
            raise forms.ValidationError(
                "bundled recipes come from recipes_app/recipes.yaml; use tenant or project scope"
            )
        return scope


@admin.register(Recipe)
class RecipeAdmin(admin.ModelAdmin):
    form = RecipeForm
    list_display = [
        "name",
        "engine",
        "scope",
        "shadows",
        "category",
        "tenant",
        "project",
        "updated_at",
    ]
    list_filter = ["scope", "category", "engine"]
    search_fields = ["name", "title", "description"]
    readonly_fields = ["shadows"]

    @admin.display(description="shadows")
    def shadows(self, recipe: Recipe) -> str:
        """The wider recipes of the same name this one hides in its scope (a project `ford`
        runs instead of the bundled `ford` for everyone in the project)."""
        hidden = shadowed_scopes(recipe) if recipe.pk else []
        return ", ".join(f"{scope} {recipe.name}" for scope in hidden) or "-"

    # Bundled recipes are shown but not edited here: the next start would undo the edit.
    def has_change_permission(self, request: HttpRequest, obj: Recipe | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Recipe | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_delete_permission(request, obj)


class YamlField(forms.CharField):
    """A JSON value edited as YAML (JSON is YAML too), shown as YAML."""

    widget = forms.Textarea(attrs={"rows": 30, "cols": 100, "style": "font-family: monospace"})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | dict):
            return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)
        return value

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        try:
            return yaml.safe_load(text) if text else None
        except yaml.YAMLError as error:
            raise forms.ValidationError(f"not YAML or JSON: {error}") from error


# A phase's keys in the order strategies.yaml and docs/engines.md write them.
PHASE_KEYS = {
    key: position
    for position, key in enumerate(
        ("name", "title", "goal", "recipe", "params", "output", "gate", "checkpoint")
    )
}


def in_written_order(phases: Any) -> Any:
    """The phases with their keys in the order they are written in (PostgreSQL's jsonb keeps
    keys in an order of its own)."""
    if not isinstance(phases, list):
        return phases
    return [
        dict(sorted(phase.items(), key=lambda item: PHASE_KEYS.get(item[0], len(PHASE_KEYS))))
        if isinstance(phase, dict)
        else phase
        for phase in phases
    ]


class PhasesField(YamlField):
    def prepare_value(self, value: Any) -> Any:
        return super().prepare_value(in_written_order(value))


class StrategyForm(forms.ModelForm):
    phases = PhasesField(
        help_text="The phases, in YAML or JSON, as recipes_app/strategy.schema.json says "
        "(docs/engines.md, vogon). Checked on save; a problem names its field."
    )

    class Meta:
        model = Strategy
        fields = ["name", "title", "description", "phases", "scope", "tenant", "project"]

    def clean_scope(self) -> str:
        scope = self.cleaned_data["scope"]
        if scope == RecipeScope.BUNDLED:
            raise forms.ValidationError(
                "bundled strategies come from recipes_app/strategies.yaml; use tenant or project "
                "scope"
            )
        return scope

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "phases" not in cleaned or "name" not in cleaned:
            return cleaned
        document = {
            "name": cleaned["name"],
            "title": cleaned.get("title", ""),
            "description": cleaned.get("description", ""),
            "phases": cleaned["phases"],
        }
        try:
            check_strategy(document)
        except StrategyInvalid as invalid:
            field = invalid.where.split(".")[0].split("[")[0]
            self.add_error(field if field in self.fields else "phases", str(invalid))
        return cleaned


@admin.register(Strategy)
class StrategyAdmin(admin.ModelAdmin):
    form = StrategyForm
    list_display = ["name", "title", "scope", "tenant", "project", "updated_at"]
    list_filter = ["scope"]
    search_fields = ["name", "title", "description"]
    readonly_fields = ["phases_as_yaml"]

    def get_fields(  # type: ignore[override]
        self, request: HttpRequest, obj: Strategy | None = None
    ) -> list[str]:
        """The form's fields; a bundled strategy (read-only) shows its phases as YAML, as the
        form of the others does, not as the JSON the database holds."""
        fields = list(StrategyForm.Meta.fields)
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            fields[fields.index("phases")] = "phases_as_yaml"
        return fields

    @admin.display(description="phases")
    def phases_as_yaml(self, strategy: Strategy) -> SafeString:
        text = yaml.safe_dump(
            in_written_order(strategy.phases), sort_keys=False, allow_unicode=True, width=100
        )
        return format_html('<pre class="strategy-yaml">{}</pre>', text)

    # Bundled strategies are shown but not edited here: the next start would undo the edit.
    def has_change_permission(self, request: HttpRequest, obj: Strategy | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Strategy | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_delete_permission(request, obj)
