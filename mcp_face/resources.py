"""The MCP resources, as JSON: a process (`vancetope://processes/tp_N`, what `process_get`
answers) and the person's inbox (`vancetope://inbox`, its OPEN items; `?status=` for others).
Reading is scoped like REST: another person's (or tenant's) process is not found."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from mcp_face import calls
from mcp_face.identity import person_of
from vancetope.errors import BrainError, NotFound
from vancetope.service_calls import call_service

INBOX_URI = "vancetope://inbox"
# A template (the SDK gives a context, hence the person, only to templates' handlers):
# `vancetope://inbox` itself reads the OPEN items.
INBOX_TEMPLATE = INBOX_URI + "{?status}"
PROCESS_URI = "vancetope://processes/{process_id}"


def process_uri(public_id: str) -> str:
    return PROCESS_URI.format(process_id=public_id)


async def _read(ctx: Context, fn: Any, **arguments: Any) -> str:
    try:
        data = await call_service(fn, person_of(ctx), **arguments)
    except NotFound as exc:
        raise ResourceNotFoundError(exc.message) from exc
    except BrainError as exc:
        raise ResourceError(f"{exc.code} {exc.error}: {exc.message}") from exc
    return json.dumps(data, ensure_ascii=False)


def register_resources(server: MCPServer) -> None:
    @server.resource(
        PROCESS_URI,
        name="process",
        description="A think process: status, task tree, last result, last messages.",
        mime_type="application/json",
    )
    async def process(process_id: str, ctx: Context) -> str:
        return await _read(ctx, calls.process_get, process=process_id, messages=5)

    @server.resource(
        INBOX_TEMPLATE,
        name="inbox",
        description="Your inbox items (OPEN unless ?status= says otherwise), newest first.",
        mime_type="application/json",
    )
    async def inbox(ctx: Context, status: str = "OPEN") -> str:
        return await _read(
            ctx, calls.inbox_list, status=status, kind=None, process=None, limit=calls.MAX_ROWS
        )
