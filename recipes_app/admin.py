from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from engines.registry import all_engines, get_engine
from recipes_app.models import Recipe, RecipeScope
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
