"""The MCP face: `/mcp` (Streamable HTTP, the `mcp` SDK's server side) over the same service
functions as the WebSocket and REST faces, authenticated by the same API tokens."""
