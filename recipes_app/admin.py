from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from engines.registry import all_engines, get_engine
from recipes_app.models import Recipe, RecipeScope


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
    list_display = ["name", "engine", "scope", "category", "tenant", "project", "updated_at"]
    list_filter = ["scope", "category", "engine"]
    search_fields = ["name", "title", "description"]

    # Bundled recipes are shown but not edited here: the next start would undo the edit.
    def has_change_permission(self, request: HttpRequest, obj: Recipe | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Recipe | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_delete_permission(request, obj)
