"""The Brain's own server tools. Role-gated ones exist only for recipes carrying the role."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vancetope.tools.errors import AwaitingExternal
from vancetope.tools.health import write_tool_health
from vancetope.tools.models import HealthStatus, Safety
from vancetope.tools.registry import server_tool

if TYPE_CHECKING:
    from vancetope.tools.dispatch import ToolBox
    from vancetope.tools.results import ToolResult


@server_tool(
    "tool_probe",
    "Call a SAFE_PROBE tool of this project once, to see whether it works now. MUTATING "
    "tools are never probed.",
    {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "description": "the tool to probe"},
            "arguments": {"type": "object", "description": "arguments for the probe call"},
        },
        "required": ["tool"],
        "additionalProperties": False,
    },
    safety=Safety.SAFE_PROBE,
    roles=("tool-prober",),
)
def tool_probe(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    result = toolbox.probe(str(arguments["tool"]), dict(arguments.get("arguments") or {}))
    return _probe_answer(str(arguments["tool"]), result)


def _probe_answer(tool: str, result: ToolResult) -> dict[str, Any]:
    # The probe itself succeeds whether or not the probed tool works: its answer says which.
    if not result.ok:
        return {
            "tool": tool,
            "ok": False,
            "error": result.error,
            "classification": result.classification,
        }
    return {"tool": tool, "ok": True, "result": result.content}


@server_tool(
    "tool_probe_as_user",
    "Call a SAFE_PROBE tool once as the user this diagnosis acts for (whose call failed): "
    "their bound client's tools are known, and a client tool runs on their client. MUTATING "
    "tools are never probed.",
    {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "description": "the tool to probe"},
            "arguments": {"type": "object", "description": "arguments for the probe call"},
        },
        "required": ["tool"],
        "additionalProperties": False,
    },
    safety=Safety.SAFE_PROBE,
    roles=("tool-prober",),
)
def tool_probe_as_user(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    result = toolbox.probe_as_user(str(arguments["tool"]), dict(arguments.get("arguments") or {}))
    return _probe_answer(str(arguments["tool"]), result)


@server_tool(
    "tool_health_write",
    "Record the health of a tool in this project: UP, DEGRADED or DOWN, with the "
    "classification of its failures and the evidence.",
    {
        "type": "object",
        "properties": {
            "tool": {"type": "string"},
            "status": {"enum": list(HealthStatus.values)},
            "classification": {"type": "string", "minLength": 1},
            "evidence": {"type": "string"},
        },
        "required": ["tool", "status", "classification"],
        "additionalProperties": False,
    },
    roles=("tool-health-writer",),
)
def tool_health_write(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    health = write_tool_health(
        project_id=toolbox.caller.project_id,
        tool=str(arguments["tool"]),
        status=HealthStatus(arguments["status"]),
        classification=str(arguments["classification"]),
        evidence=str(arguments.get("evidence", "")),
        checked_by_id=toolbox.caller.process_id,
    )
    return {"tool": health.tool, "status": health.status}


@server_tool(
    "await_external",
    "Wait for an external event, named by a key such as jira:ABC-1: this process stops here "
    "(BLOCKED) until a webhook of this project unblocks that key; then you receive "
    "`[unblocked by KEY]` and the event.",
    {
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1, "maxLength": 200},
            "reason": {"type": "string", "maxLength": 500},
        },
        "required": ["key"],
        "additionalProperties": False,
    },
    # It only marks the turn as waiting: a retried turn runs it again to wait again.
    turn_local=True,
)
def await_external(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    key, reason = str(arguments["key"]), str(arguments.get("reason", ""))
    toolbox.awaiting = AwaitingExternal(key, reason)
    return {"waiting": key, "note": "this process is BLOCKED until the event arrives"}
