"""The catalogue (every tool a process could know) and its effective pool (what it may use).

Pool = engine default ∪ recipe allowedToolsAdd − allowedToolsRemove (entries are names or
shell-style patterns such as `git_*`), minus tools whose `requires_engine_roles` the recipe's
roles lack, minus client tools when no client is bound.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from fnmatch import translate
from typing import Any

from vancetope.tools.manifest import ToolManifest
from vancetope.tools.mcp_client import McpFailure, get_mcp_manager
from vancetope.tools.models import Location, McpServer, Safety
from vancetope.tools.registry import server_tools

log = logging.getLogger(__name__)


def client_manifests(client_tools: Iterable[dict[str, Any]]) -> list[ToolManifest]:
    return [
        ToolManifest(
            name=str(tool["name"]),
            description=str(tool.get("description", "")),
            parameters=dict(tool.get("parameters") or {"type": "object"}),
            location=Location.CLIENT,
            safety=Safety(tool.get("safety", Safety.MUTATING)),
            idempotent=bool(tool.get("idempotent", False)),
        )
        for tool in client_tools
    ]


def mcp_manifests(project_id: int) -> list[ToolManifest]:
    """The tools of the project's enabled MCP servers; a server that cannot be reached is
    left out (and logged), so one broken server does not hide the others."""
    manifests = []
    manager = get_mcp_manager()
    for server in McpServer.objects.filter(project_id=project_id, enabled=True):
        try:
            tools = manager.list_tools(server)
        except McpFailure as exc:
            log.warning("MCP server %s left out of the catalogue: %s", server, exc)
            continue
        for tool in tools:
            manifests.append(
                ToolManifest(
                    name=f"{server.tool_prefix}{tool.name}",
                    description=tool.description,
                    parameters=tool.input_schema,
                    location=Location.MCP,
                    safety=Safety.SAFE_PROBE if tool.read_only else Safety.MUTATING,
                    idempotent=tool.idempotent,
                    mcp_server_id=server.pk,
                    remote_name=tool.name,
                )
            )
    return manifests


def build_catalogue(
    project_id: int, client_tools: Iterable[dict[str, Any]], *, with_mcp: bool = True
) -> dict[str, ToolManifest]:
    """Every tool by name; on a name clash server tools win over MCP, MCP over client."""
    catalogue: dict[str, ToolManifest] = {}
    groups = [
        [tool.manifest for tool in server_tools().values()],
        mcp_manifests(project_id) if with_mcp else [],
        client_manifests(client_tools),
    ]
    for group in groups:
        for manifest in group:
            if manifest.name in catalogue:
                log.warning(
                    "tool %s (%s) hidden by a tool of the same name",
                    manifest.name,
                    manifest.location,
                )
                continue
            catalogue[manifest.name] = manifest
    return catalogue


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether `name` matches one of the shell-style `patterns` (case-sensitive, as
    fnmatchcase)."""
    return _any_of(tuple(patterns)).match(name) is not None


@functools.lru_cache(maxsize=1024)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled expression for a pool's patterns (fnmatch's own translation of each):
    every turn builds its pool from the same few lists, and one match per tool costs less
    than a fnmatchcase call per pattern."""
    if not patterns:
        return re.compile(r"(?!)")  # matches nothing
    return re.compile("|".join(f"(?:{translate(pattern)})" for pattern in patterns))


def effective_pool(
    catalogue: dict[str, ToolManifest],
    *,
    engine_default: Iterable[str],
    add: Iterable[str],
    remove: Iterable[str],
    roles: Iterable[str],
    client_bound: bool,
) -> dict[str, ToolManifest]:
    wanted = _any_of((*engine_default, *add))
    removed = _any_of(tuple(remove))
    role_set = set(roles)
    return {
        name: manifest
        for name, manifest in catalogue.items()
        if wanted.match(name)
        and not removed.match(name)
        and manifest.requires_engine_roles <= role_set
        and (client_bound or manifest.location != Location.CLIENT)
    }


def pool_patterns_need_mcp(patterns: Iterable[str], catalogue_without_mcp: Iterable[str]) -> bool:
    """True unless every pattern is an exact name already known without MCP: then the MCP
    servers need not be started just to build this pool."""
    known = set(catalogue_without_mcp)
    return any(pattern not in known for pattern in patterns)
