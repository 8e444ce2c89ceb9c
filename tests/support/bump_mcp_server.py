"""An MCP server for the journal's tests: each tool appends a line to the file BUMP_FILE names,
as a tool with an effect outside the Brain would (a payment, a ticket), then sleeps BUMP_SLEEP
seconds (the window in which a test kills the Brain while the tool runs).

- `bump` is MUTATING and declares nothing: running it twice appends two lines;
- `bump_idempotent` declares `idempotentHint`: it appends the idempotency key the request's
  `_meta` carried, so a test sees the key a repeat was sent with.
"""

from __future__ import annotations

import json
import os
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("bump")


def _append(record: dict[str, object]) -> None:
    with open(os.environ["BUMP_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
        out.flush()
        os.fsync(out.fileno())
    time.sleep(float(os.environ.get("BUMP_SLEEP", "0")))


@server.tool()
def bump(key: str) -> str:
    """Append one line for `key` (not idempotent: every call appends)."""
    _append({"tool": "bump", "key": key})
    return f"bumped {key}"


@server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
def bump_idempotent(key: str, ctx: Context) -> str:
    """Append one line for `key`, with the request's idempotency key."""
    meta = ctx.request_context.meta or {}
    _append({"tool": "bump_idempotent", "key": key, "idempotencyKey": meta.get("idempotencyKey")})
    return f"bumped {key} once"


if __name__ == "__main__":
    server.run("stdio")
