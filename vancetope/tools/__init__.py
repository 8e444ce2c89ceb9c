"""The tool kernel: catalogue, effective pools, one dispatch path, client bridge, MCP, health."""
