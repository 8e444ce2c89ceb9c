"""Thinking spaces in `vance chat`: `/space` shows the tree, and the same controls as the web
UI's branch map (split, checkpoint, return, rename, retry a fork) send the `space-*` frames."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from rich.tree import Tree

if TYPE_CHECKING:
    from vance.chat import ChatClient

USAGE = """\
/space start           make this chat a thinking space, with suggested branches
/space [node_N|spc_N]  this session's thinking space (or that node's, space's)
/space split node_N TITLE   a child branch (its parent's agent hands it off)
/space checkpoint node_N    the branch's agent publishes where it stands
/space return node_N        the branch's agent returns it to its parent, sealed
/space rename node_N TITLE  a new title
/space retry node_N         ask again for a pending fork's Handoff"""

# The branch map's colours (docs/spaces.md), as terminal styles.
STYLES = {
    "forkHandoffPending": "cyan",
    "returning": "magenta",
    "returned": "dim",
    "refreshing": "bright_magenta",
    "checkpointed": "yellow",
    "active": "blue",
    "dormant": "blue",
}
SHOWN_CHARS = 90


def shown_state(node: dict[str, Any]) -> str:
    if node["state"] == "active" and node.get("checkpointRefreshingAt"):
        return "refreshing"
    if node["state"] == "active" and node.get("checkpointHandoff"):
        return "checkpointed"
    return str(node["state"])


def node_label(node: dict[str, Any]) -> Text:
    state = shown_state(node)
    label = Text(f"{node['id']} ", style="bold")
    label.append(node["title"])
    label.append(f"  [{state}]", style=STYLES.get(state, ""))
    handoff = node.get("returnedHandoff") or node.get("checkpointHandoff")
    if handoff:
        first = " ".join(str(handoff).split())
        cut = first if len(first) <= SHOWN_CHARS else first[: SHOWN_CHARS - 1] + "…"
        label.append(f"\n{cut}", style="dim")
    return label


def space_tree(space: dict[str, Any]) -> Tree:
    """The space as a rich Tree from its root, children in their sort order."""
    nodes = space["nodes"]
    by_parent: dict[str | None, list[dict[str, Any]]] = {}
    for node in nodes:
        by_parent.setdefault(node["parentId"], []).append(node)
    tree = Tree(Text(f"space {space['id']} (revision {space['revision']})", style="bold"))

    def grow(branch: Tree, parent_id: str | None) -> None:
        for node in sorted(by_parent.get(parent_id, []), key=lambda n: n["sortOrder"]):
            grow(branch.add(node_label(node)), node["id"])

    grow(tree, None)
    return tree


class ShownRevisions:
    """The newest revision of each space the chat printed. A change comes twice, as the reply
    to the command that made it and as the `space-state` event every session of the space gets
    (and a resume replays events): each revision is printed once, and none older than one
    printed (a space's whole state at a revision: an older one is out of date)."""

    def __init__(self) -> None:
        self.revisions: dict[str, int] = {}

    def is_new(self, space: dict[str, Any]) -> bool:
        """Whether `space` is a revision not printed yet (and now counted as printed)."""
        space_id, revision = str(space.get("id")), space.get("revision")
        if not isinstance(revision, int):
            return True
        if revision <= self.revisions.get(space_id, -1):
            return False
        self.revisions[space_id] = revision
        return True


async def space_command(chat: ChatClient, rest: str) -> None:
    words = rest.split(" ", 2)
    verb = words[0] if words and words[0] else ""
    if verb in {"", "show"} or verb.startswith(("node_", "spc_")):
        target = verb if verb.startswith(("node_", "spc_")) else ""
        data = {"spaceId": target} if target.startswith("spc_") else {}
        if target.startswith("node_"):
            data = {"nodeId": target}
        await show(chat, "space-get", data)
        return
    if verb == "start":
        chat.printer.line(Text("the agent suggests the first branches…", style="dim"))
        await show(chat, "space-suggest", {})
        return
    node_id = words[1] if len(words) > 1 else ""
    title = words[2].strip() if len(words) > 2 else ""
    frames = {
        "split": "space-split",
        "rename": "space-rename",
        "checkpoint": "space-checkpoint",
        "return": "space-return",
        "retry": "space-fork-retry",
    }
    if verb not in frames or not node_id or (verb in {"split", "rename"} and not title):
        chat.printer.line(Text(USAGE, style="yellow"))
        return
    data = {"nodeId": node_id, **({"title": title} if title else {})}
    if verb in {"checkpoint", "return"}:
        chat.printer.line(Text(f"{node_id}: its agent takes a control turn…", style="dim"))
    await show(chat, frames[verb], data)


async def show(chat: ChatClient, kind: str, data: dict[str, Any]) -> None:
    """The space the reply carries: always for `/space` (asked to be shown), else unless its
    revision was printed already (its space-state event came first)."""
    reply = await chat.request(kind, data)
    if reply["type"] == "error":
        chat.printer.error(reply["data"])
        return
    space = reply["data"]["space"]
    if chat.printer.spaces.is_new(space) or kind == "space-get":
        chat.printer.line(space_tree(space))
