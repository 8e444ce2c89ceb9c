"""Tool manifests: what the catalogue knows about a tool, wherever it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vancetope.llm.base import ToolSchema
from vancetope.tools.models import Location, Safety


@dataclass(frozen=True)
class ToolManifest:
    name: str
    description: str
    # JSON Schema of the arguments object; checked before anything runs.
    parameters: dict[str, Any]
    location: Location
    safety: Safety = Safety.MUTATING
    # Running it twice has the effect of running it once (MCP's idempotentHint, a client tool
    # registered `idempotent: true`): a call the Brain's stop left without a result runs again,
    # with the same idempotency key, instead of asking its person (vancetope/tools/replay.py).
    idempotent: bool = False
    # Its effect is on the turn alone (await_external): a retried turn runs it again.
    turn_local: bool = False
    # The process's recipe must carry every one of these roles to see the tool.
    requires_engine_roles: frozenset[str] = frozenset()
    # For MCP tools: the McpServer row and the tool's name on that server.
    mcp_server_id: int | None = None
    remote_name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def schema(self, *, down: str = "") -> ToolSchema:
        description = self.description
        if down:
            description = f"[DOWN: {down}] {description}"
        return ToolSchema(self.name, description, self.parameters)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "location": str(self.location),
            "safety": str(self.safety),
            "idempotent": self.idempotent,
            "requiresEngineRoles": sorted(self.requires_engine_roles),
        }
