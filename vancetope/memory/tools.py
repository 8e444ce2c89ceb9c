"""The memory tools of engines' pools (docs/protocol.md "Tools of the orchestration engines"):
`memory_read {key}`, `memory_write {key?, content, scope?, tags?}`, `memory_search {query, k?}`,
and the knowledge graph's `memory_neighbours {nodeId, types?, limit?}` and
`memory_edges {type, nodeId?, limit?}`. They act for the calling process as `ctx.memory` does
(capability.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vancetope.errors import BadRequest, Forbidden, NotFound
from vancetope.memory.capability import MAX_EDGES, MemoryAccess
from vancetope.memory.models import EdgeType, Scope
from vancetope.memory.search import MAX_K
from vancetope.tools.checker import Classification
from vancetope.tools.errors import ToolFailure
from vancetope.tools.models import Safety
from vancetope.tools.registry import server_tool

if TYPE_CHECKING:
    from vancetope.tools.dispatch import ToolBox

MEMORY_TOOLS = ("memory_read", "memory_write", "memory_search")
GRAPH_TOOLS = ("memory_neighbours", "memory_edges")
NODE_ID = {"type": "string", "pattern": "^(mem_[0-9]+|doc_[0-9]+:[0-9]+)$"}
LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_EDGES}


def _access(toolbox: ToolBox) -> MemoryAccess:
    caller = toolbox.caller
    return MemoryAccess.of(caller.project_id, caller.session_id, caller.owner_id, caller.public_id)


@server_tool(
    "memory_read",
    "Read the remembered value of a key: the session's own, else the project's, else the "
    "project group's, else the tenant's. Says which scope answered; found is false if none.",
    {
        "type": "object",
        "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 200}},
        "required": ["key"],
        "additionalProperties": False,
    },
    safety=Safety.SAFE_PROBE,
)
def memory_read(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    item = _access(toolbox).lookup(str(arguments["key"]))
    if item is None:
        return {"key": arguments["key"], "found": False}
    return {
        "key": item.key,
        "found": True,
        "content": item.content,
        "scope": item.scope,
        "itemId": item.public_id,
    }


@server_tool(
    "memory_write",
    "Remember something. With a key, a later write of the same key in the same scope "
    "replaces the value (the old one is kept as superseded). scope: session (this session "
    "only), project (default: every session of the project), group or tenant (admins only).",
    {
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1, "maxLength": 200},
            "content": {"type": "string", "minLength": 1, "maxLength": 20000},
            "scope": {"enum": list(Scope.values)},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["content"],
        "additionalProperties": False,
    },
)
def memory_write(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    try:
        item = _access(toolbox).write_item(
            str(arguments["content"]),
            key=arguments.get("key"),
            scope=arguments.get("scope"),
            tags=list(arguments.get("tags") or []),
        )
    except (BadRequest, Forbidden) as exc:
        raise ToolFailure(exc.message, classification=Classification.BAD_ARGUMENTS) from exc
    return {"itemId": item.public_id, "scope": item.scope, "key": item.key or None}


@server_tool(
    "memory_search",
    "Search the memory and the project's documents (words and meaning); the best k results "
    "with their scope, source and a snippet.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    safety=Safety.SAFE_PROBE,
)
def memory_search(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    return {"results": _access(toolbox).search(str(arguments["query"]), int(arguments.get("k", 5)))}


@server_tool(
    "memory_neighbours",
    "The knowledge graph around one node (a memory item mem_N or a document chunk doc_N:K, "
    "as memory_search names them): its valid edges (supports, contradicts, derived_from, "
    "mentions), each with its direction and the other end's snippet. types: only these.",
    {
        "type": "object",
        "properties": {
            "nodeId": NODE_ID,
            "types": {"type": "array", "items": {"enum": list(EdgeType.values)}},
            "limit": LIMIT,
        },
        "required": ["nodeId"],
        "additionalProperties": False,
    },
    safety=Safety.SAFE_PROBE,
)
def memory_neighbours(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    node_id = str(arguments["nodeId"])
    try:
        edges = _access(toolbox).neighbours(
            node_id, list(arguments.get("types") or []), int(arguments.get("limit", MAX_EDGES))
        )
    except (BadRequest, NotFound) as exc:
        raise ToolFailure(exc.message, classification=Classification.BAD_ARGUMENTS) from exc
    return {"nodeId": node_id, "edges": edges}


@server_tool(
    "memory_edges",
    "The knowledge graph's valid edges of one type (supports, contradicts, derived_from, "
    "mentions), newest first; nodeId: only those at that node.",
    {
        "type": "object",
        "properties": {
            "type": {"enum": list(EdgeType.values)},
            "nodeId": NODE_ID,
            "limit": LIMIT,
        },
        "required": ["type"],
        "additionalProperties": False,
    },
    safety=Safety.SAFE_PROBE,
)
def memory_edges(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    try:
        edges = _access(toolbox).edges(
            str(arguments["type"]),
            node_id=arguments.get("nodeId"),
            limit=int(arguments.get("limit", MAX_EDGES)),
        )
    except (BadRequest, NotFound) as exc:
        raise ToolFailure(exc.message, classification=Classification.BAD_ARGUMENTS) from exc
    return {"type": arguments["type"], "edges": edges}
