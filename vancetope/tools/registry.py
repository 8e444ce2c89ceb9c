"""Server-side tools: functions in the Brain, registered with `@server_tool`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vancetope.tools.manifest import ToolManifest
from vancetope.tools.models import Location, Safety

if TYPE_CHECKING:
    from vancetope.tools.dispatch import ToolBox

ServerFunction = Callable[["ToolBox", dict[str, Any]], Any]


@dataclass(frozen=True)
class ServerTool:
    manifest: ToolManifest
    run: ServerFunction


_server_tools: dict[str, ServerTool] = {}


def server_tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    *,
    safety: Safety = Safety.MUTATING,
    roles: tuple[str, ...] = (),
    idempotent: bool = False,
    turn_local: bool = False,
) -> Callable[[ServerFunction], ServerFunction]:
    """Register a function `(toolbox, arguments) -> JSON-able result` as a server tool. It
    raises ToolFailure (or any exception) to fail. `idempotent`: running it twice has the
    effect of once; `turn_local`: its effect is on the turn alone (vancetope/tools/replay.py
    says what a retried turn does with each)."""

    def register(run: ServerFunction) -> ServerFunction:
        manifest = ToolManifest(
            name=name,
            description=description,
            parameters=parameters,
            location=Location.SERVER,
            safety=safety,
            requires_engine_roles=frozenset(roles),
            idempotent=idempotent,
            turn_local=turn_local,
        )
        _server_tools[name] = ServerTool(manifest, run)
        return run

    return register


def unregister_server_tool(name: str) -> None:
    _server_tools.pop(name, None)


def server_tools() -> dict[str, ServerTool]:
    return dict(_server_tools)
