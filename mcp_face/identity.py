"""The person behind an MCP request: `mcp_face.endpoint` authenticates the API token before
the SDK sees the request and leaves the user in the ASGI scope; tools and resources read it
from the request the SDK hands them."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from vancetope.errors import Unauthenticated

# The ASGI scope key the endpoint sets (a Django user, authenticated).
SCOPE_KEY = "vancetope.user"


def person_of(ctx: Context) -> Any:
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    user = scope.get(SCOPE_KEY)
    if user is None:
        # Only reachable if the SDK were served without the endpoint in front of it.
        raise Unauthenticated("no authenticated person on this request")
    return user
