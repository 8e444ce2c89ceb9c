"""What a recipe may name: tools in its allowed-tools lists, engine roles in `roles`. The
admin's recipe form and the REST recipe writes check the same (recipes_app/writes.py)."""

from __future__ import annotations

from typing import Any

from engines.registry import all_engines
from vance.local_tools import TOOL_SPECS
from vancetope.tenancy.models import Project
from vancetope.tools.catalogue import matches
from vancetope.tools.models import McpServer
from vancetope.tools.registry import server_tools

GLOB_CHARACTERS = set("*?[")


def known_tool_names() -> set[str]:
    """The server tools, the engines' own and the `vance` client's tools: the catalogue without
    MCP (listing MCP tools would start every MCP server just to validate a form)."""
    engine_tools = {tool for engine in all_engines() for tool in engine.allowed_tools}
    return set(server_tools()) | engine_tools | {str(spec["name"]) for spec in TOOL_SPECS}


def known_engine_roles() -> set[str]:
    """The engine roles some tool asks for (`requires_engine_roles`): the only ones a recipe's
    `roles` can usefully name."""
    return {
        role for tool in server_tools().values() for role in tool.manifest.requires_engine_roles
    }


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


def tool_list_problem(entries: Any, project: Project | None, tenant_id: int | None) -> str | None:
    """What is wrong with an allowed-tools list, or None."""
    if entries in (None, ""):
        return None
    if not isinstance(entries, list) or not all(
        isinstance(entry, str) and entry for entry in entries
    ):
        return 'a JSON list of tool names or patterns, e.g. ["git_*"]'
    unknown = unknown_tool_entries(entries, project, tenant_id)
    if not unknown:
        return None
    known = ", ".join(sorted(known_tool_names()))
    return (
        f"unknown tools: {', '.join(unknown)}; known: {known} "
        "(MCP tools count when their server, with its tool prefix, is in scope)"
    )


def roles_problem(roles: Any) -> str | None:
    """What is wrong with a recipe's engine roles, or None."""
    if roles in (None, ""):
        return None
    if not isinstance(roles, list) or not all(isinstance(role, str) for role in roles):
        return 'a JSON list of engine roles, e.g. ["tool-prober"]'
    unknown = sorted(set(roles) - known_engine_roles())
    if not unknown:
        return None
    return f"unknown engine roles: {', '.join(unknown)}; known: " + ", ".join(
        sorted(known_engine_roles())
    )
