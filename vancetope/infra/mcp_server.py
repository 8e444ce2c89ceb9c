"""The `mcp` SDK's MCPServer serves `subscriptions/listen` with one bus for every client; the
Brain's MCP face (mcp_face/notifications.py) serves it with a bus per person, so a stream only
carries the person's own events. MCPServer takes no handler of its own for that method: this
registers one on the low-level server it wraps (UPSTREAM.md, `mcp_server.py`)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer


def lowlevel_server(server: MCPServer) -> Any:
    """The low-level `Server` that MCPServer wraps, which a session manager serves."""
    return server._lowlevel_server


def replace_request_handler(
    server: MCPServer, method: str, params_type: type[Any], handler: Any
) -> None:
    """Serve `method` with `handler` (the low-level `Server.add_request_handler`, public)."""
    lowlevel_server(server).add_request_handler(method, params_type, handler)
