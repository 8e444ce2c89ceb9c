"""A tiny MCP server for tests: `ping` answers, `crash` kills the server process.

Over stdio by default; `--http PORT` serves streamable HTTP at http://127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("crashy")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


@server.tool()
def crash() -> str:
    """Exit the server process at once, as a crash would."""
    os._exit(3)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
