from __future__ import annotations

from django import forms
from django.contrib import admin

from engines.registry import all_engines, get_engine
from recipes_app.models import Recipe


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


@admin.register(Recipe)
class RecipeAdmin(admin.ModelAdmin):
    form = RecipeForm
    list_display = ["name", "engine", "scope", "category", "tenant", "project", "updated_at"]
    list_filter = ["scope", "category", "engine"]
    search_fields = ["name", "title", "description"]
