"""The thinking_* server tools of a node's agent (docs/protocol.md, "Tools of the orchestration
engines"). In arthur's pool; each answers the space as it is after the call, or a ToolFailure
the LLM reads (a refusal changed nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spaces.actions import agent
from spaces.presenters import space_data
from spaces.store import Snapshot, load
from vancetope.errors import BrainError
from vancetope.tools.checker import Classification
from vancetope.tools.errors import ToolFailure
from vancetope.tools.models import Safety
from vancetope.tools.registry import server_tool

if TYPE_CHECKING:
    from vancetope.tools.dispatch import ToolBox

HANDOFF = {"type": "string", "minLength": 1, "description": "Markdown"}
TITLE = {"type": "string", "minLength": 1}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _answer(toolbox: ToolBox, act: Callable[[int], Snapshot]) -> Any:
    try:
        snapshot = act(toolbox.caller.process_id)
    except BrainError as exc:
        classification = (
            Classification.BAD_ARGUMENTS if exc.code == 400 else Classification.NOT_ALLOWED
        )
        raise ToolFailure(exc.message, classification=classification) from exc
    you = next((n for n in snapshot.nodes if n.chat_process_id == toolbox.caller.process_id), None)
    return {
        "youAre": you.public_id if you else None,
        "space": space_data(snapshot.space, snapshot.nodes),
    }


@server_tool(
    "thinking_start",
    "Make this conversation the root of a thinking space (a tree of branches that share only "
    "Handoffs); calling it again answers the same space.",
    _schema({}, []),
)
def thinking_start(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    return _answer(toolbox, agent.start_space)


@server_tool(
    "thinking_suggest",
    "From the root only, once: create 2 to 4 first branches (prefer four real directions), "
    "each with the Handoff it starts from. They are not run; the person opens them.",
    _schema(
        {
            "children": {
                "type": "array",
                "minItems": 2,
                "maxItems": 4,
                "items": _schema({"title": TITLE, "handoff": HANDOFF}, ["title", "handoff"]),
            }
        },
        ["children"],
    ),
)
def thinking_suggest(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    children = [(str(c["title"]), str(c["handoff"])) for c in arguments["children"]]
    return _answer(toolbox, lambda process: agent.suggest(process, children))


@server_tool(
    "thinking_split",
    "Create one child branch of this branch, starting from the Handoff you write for it (it "
    "sees nothing else of this conversation). It is not run.",
    _schema({"title": TITLE, "handoff": HANDOFF}, ["title", "handoff"]),
)
def thinking_split(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    title, handoff = str(arguments["title"]), str(arguments["handoff"])
    return _answer(toolbox, lambda process: agent.split(process, title, handoff)[0])


@server_tool(
    "thinking_fork_handoff",
    "Write the inherited Handoff of the child branch the person split off this one (nodeId "
    "may be left out when exactly one waits).",
    _schema(
        {"nodeId": {"type": "string", "pattern": "^node_[0-9]+$"}, "handoff": HANDOFF},
        ["handoff"],
    ),
)
def thinking_fork_handoff(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    node_id, handoff = arguments.get("nodeId"), str(arguments["handoff"])
    return _answer(toolbox, lambda process: agent.fork_handoff(process, node_id, handoff))


@server_tool(
    "thinking_checkpoint",
    "Publish where this branch stands now, for its sibling branches (replaces the previous "
    "checkpoint).",
    _schema({"handoff": HANDOFF}, ["handoff"]),
)
def thinking_checkpoint(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    handoff = str(arguments["handoff"])
    return _answer(toolbox, lambda process: agent.checkpoint(process, handoff))


@server_tool(
    "thinking_return",
    "Return this branch: publish its final Handoff to the parent branch and seal it. Not "
    "while one of its children is unreturned; the root does not return.",
    _schema({"handoff": HANDOFF}, ["handoff"]),
)
def thinking_return(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    handoff = str(arguments["handoff"])
    return _answer(toolbox, lambda process: agent.return_node(process, handoff))


@server_tool(
    "thinking_status",
    "The thinking space of this conversation: every branch, its state and its Handoffs.",
    _schema({}, []),
    safety=Safety.SAFE_PROBE,
)
def thinking_status(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    return _answer(toolbox, lambda process: load(agent.caller_node(process).space_id))
