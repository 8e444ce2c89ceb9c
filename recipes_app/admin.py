from __future__ import annotations

from typing import Any

import yaml
from django import forms
from django.contrib import admin
from django.http import HttpRequest

from engines.registry import all_engines, get_engine
from recipes_app.models import Recipe, RecipeScope, Strategy
from recipes_app.strategies import StrategyInvalid, check_strategy
from vance.local_tools import TOOL_SPECS
from vancetope.tenancy.models import Project
from vancetope.tools.catalogue import matches
from vancetope.tools.models import McpServer
from vancetope.tools.registry import server_tools

TOOL_LISTS = ("allowed_tools_add", "allowed_tools_remove")
GLOB_CHARACTERS = set("*?[")


def known_tool_names() -> set[str]:
    """The server tools, the engines' own and the `vance` client's tools: the catalogue without
    MCP (listing MCP tools would start every MCP server just to validate a form)."""
    engine_tools = {tool for engine in all_engines() for tool in engine.allowed_tools}
    return set(server_tools()) | engine_tools | {str(spec["name"]) for spec in TOOL_SPECS}


def mcp_servers_in_scope(project: Project | None, tenant_id: int | None) -> list[McpServer]:
    servers = McpServer.objects.filter(enabled=True)
    if project is not None:
        return list(servers.filter(project=project))
    if tenant_id is not None:
        return list(servers.filter(project__tenant_id=tenant_id))
    return []


def unknown_tool_entries(
    entries: list[Any], project: Project | None, tenant_id: int | None
) -> list[str]:
    """The entries of an allowed-tools list that name no tool the Brain knows of.

    An MCP tool is recognised by the tool prefix of an enabled server in the recipe's scope; a
    server without a prefix may offer any name, so with one in scope every name is let
    through, and a pattern is let through whenever an MCP server is in scope.
    """
    known = known_tool_names()
    servers = mcp_servers_in_scope(project, tenant_id)
    prefixes = [server.tool_prefix for server in servers if server.tool_prefix]
    open_server = any(not server.tool_prefix for server in servers)
    unknown = []
    for entry in entries:
        name = str(entry)
        if name in known:
            continue
        if GLOB_CHARACTERS & set(name):
            if any(matches(tool, [name]) for tool in known) or servers:
                continue
        elif open_server or any(name.startswith(prefix) for prefix in prefixes):
            continue
        unknown.append(name)
    return unknown


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

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        project = cleaned.get("project")
        tenant = cleaned.get("tenant")
        for field in TOOL_LISTS:
            entries = cleaned.get(field)
            if entries in (None, ""):
                continue
            if not isinstance(entries, list) or not all(
                isinstance(entry, str) and entry for entry in entries
            ):
                self.add_error(field, 'a JSON list of tool names or patterns, e.g. ["git_*"]')
                continue
            unknown = unknown_tool_entries(entries, project, tenant.pk if tenant else None)
            if unknown:
                known = ", ".join(sorted(known_tool_names()))
                self.add_error(
                    field,
                    f"unknown tools: {', '.join(unknown)}; known: {known} "
                    "(MCP tools count when their server, with its tool prefix, is in scope)",
                )
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


class StrategyForm(forms.ModelForm):
    phases = YamlField(
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

    # Bundled strategies are shown but not edited here: the next start would undo the edit.
    def has_change_permission(self, request: HttpRequest, obj: Strategy | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Strategy | None = None) -> bool:
        if obj is not None and obj.scope == RecipeScope.BUNDLED:
            return False
        return super().has_delete_permission(request, obj)
