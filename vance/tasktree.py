"""Task trees in `vance chat`: the protocol's task tree object (`{version, rootId, nodes}`, each
node with its parentId, kind, title, status, processId, result, error, dependsOn, attempts,
replanOf, startedAt, finishedAt) as a rich Tree, and how the chat follows one while it runs.
A worker's structured result shows as its summary; `/tree tp_N nX` prints one node whole.

A task-tree event carries the whole tree on every change, and printing it whole each time buries
the chat under copies of a tree of fifty nodes. A rich `Live` region that redraws in place would
fight the streamed replies and the line being typed (both write to the same terminal), so the chat
prints the tree whole only when it first sees it, when its shape changes (a plan added nodes) and
once when every node has finished; in between, one line per node whose status changed
(`✓ tp_4 n3 Research — DONE 2.1s`), except a worker's that has not finished (RUNNING, BLOCKED):
those are told by the tree's progress line (vance/progress.py). `/tree` prints a process's
current tree at any time.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich.console import Group
from rich.json import JSON
from rich.text import Text
from rich.tree import Tree

FINISHED = {"DONE", "FAILED", "SKIPPED"}
ICONS = {"PENDING": "○", "RUNNING": "▶", "BLOCKED": "‖", "DONE": "✓", "FAILED": "✗", "SKIPPED": "–"}
STYLES = {
    "PENDING": "dim",
    "RUNNING": "bold blue",
    "BLOCKED": "yellow",
    "DONE": "green",
    "FAILED": "bold red",
    "SKIPPED": "dim",
}
# How much of a node's result or error a tree line shows.
SHOWN_CHARS = 100


def tree_nodes(tree: Any) -> list[dict[str, Any]]:
    """The nodes with their parent ids: the protocol's flat `nodes`, or nested `children` as
    another engine may send them (ids made up where they have none)."""
    if isinstance(tree, dict) and isinstance(tree.get("nodes"), list):
        return [node for node in tree["nodes"] if isinstance(node, dict) and "id" in node]
    nodes: list[dict[str, Any]] = []

    def walk(node: Any, parent_id: str | None) -> None:
        if not isinstance(node, dict):
            return
        node_id = str(node.get("id") or f"node{len(nodes) + 1}")
        nodes.append({**node, "id": node_id, "parentId": parent_id})
        for child in node.get("children") or []:
            walk(child, node_id)

    for top in tree if isinstance(tree, list) else [tree]:
        walk(top, None)
    return nodes


def duration(node: dict[str, Any]) -> str:
    """How long a finished node took (`2.1s`, `3m05s`); empty when it has not finished."""
    try:
        started = datetime.fromisoformat(str(node["startedAt"]))
        finished = datetime.fromisoformat(str(node["finishedAt"]))
    except (KeyError, ValueError):
        return ""
    seconds = max(0.0, (finished - started).total_seconds())
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _title(node: dict[str, Any]) -> str:
    for key in ("title", "name", "goal", "text"):
        if node.get(key):
            return str(node[key])
    return str(node["id"])


def _shown(value: Any) -> str:
    """A result or error in one short line; a structured result by its summary."""
    if isinstance(value, dict) and isinstance(value.get("summary"), str):
        value = value["summary"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def node_label(node: dict[str, Any]) -> Text:
    status = str(node.get("status") or "")
    style = STYLES.get(status, "")
    label = Text(f"{ICONS.get(status, '·')} ", style=style)
    if node.get("kind"):
        label.append(f"{node['kind']} ", style="dim")
    label.append(_title(node), style="bold")
    label.append(f" ({node['id']})  ", style="dim")
    label.append(status or "?", style=style)
    for badge in _badges(node):
        label.append(f" [{badge}]", style="yellow" if badge.startswith("re-plan") else "dim")
    if took := duration(node):
        label.append(f" {took}", style="dim")
    if node.get("processId"):
        label.append(f"  {node['processId']}", style="cyan")
    if node.get("error"):
        label.append(f"  {_shown(node['error'])}", style="red")
    elif node.get("result") not in (None, "") and status == "DONE":
        label.append(f"  {_shown(node['result'])}", style="dim")
    return label


def _badges(node: dict[str, Any]) -> list[str]:
    """What marks a node beyond its status: a re-plan, a retry, what it waits for."""
    badges = []
    if node.get("replanOf"):
        badges.append(f"re-plan of {', '.join(map(str, node['replanOf']))}")
    if isinstance(node.get("attempts"), int) and node["attempts"] > 1:
        badges.append(f"attempt {node['attempts']}")
    if node.get("dependsOn"):
        badges.append(f"after {', '.join(map(str, node['dependsOn']))}")
    return badges


def heading(process_id: str, nodes: list[dict[str, Any]]) -> str:
    """`tp_4 task tree · 3/8 finished · 4 running at once · 1 failed · 1 re-plan`."""
    done = sum(1 for node in nodes if node.get("status") in FINISHED)
    text = f"{process_id} task tree · {done}/{len(nodes)} finished"
    running = sum(1 for n in nodes if n.get("kind") == "WORKER" and n.get("status") == "RUNNING")
    if running > 1:
        text += f" · {running} running at once"
    if failed := sum(1 for node in nodes if node.get("status") == "FAILED"):
        text += f" · {failed} failed"
    if replans := sum(1 for node in nodes if node.get("replanOf")):
        text += f" · {replans} re-plan{'s' if replans > 1 else ''}"
    return text


def node_detail(process_id: str, tree: Any, node_id: str) -> Group | Text:
    """One node whole: its line, its goal, its error, and its result (JSON when structured)."""
    node = next((n for n in tree_nodes(tree) if str(n["id"]) == node_id), None)
    if node is None:
        return Text(f"{process_id} has no node {node_id}", style="yellow")
    parts: list[Any] = [Text(f"{process_id} ", style="bold") + node_label(node)]
    if node.get("goal"):
        parts.append(Text(f"goal: {node['goal']}"))
    if node.get("error"):
        parts.append(Text(f"error: {node['error']}", style="red"))
    result = node.get("result")
    if isinstance(result, dict | list):
        parts.append(JSON(json.dumps(result, ensure_ascii=False)))
    elif result not in (None, ""):
        parts.append(Text(str(result)))
    return Group(*parts)


def task_tree(process_id: str, tree: Any) -> Tree:
    """The whole tree under a heading naming its process and how far it is."""
    nodes = tree_nodes(tree)
    root = Tree(Text(heading(process_id, nodes), style="bold"))
    ids = {node["id"] for node in nodes}
    below: dict[str | None, list[dict[str, Any]]] = {}
    for node in nodes:
        parent = node.get("parentId")
        below.setdefault(parent if parent in ids and parent != node["id"] else None, []).append(
            node
        )
    drawn: set[str] = set()

    def add(branch: Tree, parent: str | None) -> None:
        for node in below.get(parent, []):
            if node["id"] in drawn:
                continue  # a cycle of parent ids: each node once
            drawn.add(node["id"])
            add(branch.add(node_label(node)), node["id"])

    add(root, None)
    return root


def status_line(process_id: str, node: dict[str, Any]) -> Text:
    """One node's status change: `✓ tp_4 n3 Research — DONE 2.1s`."""
    status = str(node.get("status") or "?")
    line = Text(f"{ICONS.get(status, '·')} {process_id} {node['id']} {_title(node)} — ")
    line.stylize(STYLES.get(status, ""), 0, 1)
    line.append(status, style=STYLES.get(status, ""))
    if took := duration(node):
        line.append(f" {took}", style="dim")
    if node.get("processId") and status in {"RUNNING", "BLOCKED"}:
        line.append(f"  worker {node['processId']}", style="cyan")
    if node.get("replanOf"):
        line.append(f"  re-plan of {', '.join(map(str, node['replanOf']))}", style="yellow")
    if node.get("error"):
        line.append(f"  {_shown(node['error'])}", style="red")
    elif status == "DONE" and node.get("kind") == "WORKER" and node.get("result"):
        line.append(f"  {_shown(node['result'])}", style="dim")
    return line


def unfinished_worker(node: dict[str, Any]) -> bool:
    """A worker node that has not finished: its progress is its tree's progress line's."""
    worker = node.get("kind") == "WORKER" or bool(node.get("processId"))
    return worker and node.get("status") not in FINISHED


class TaskTreeFollower:
    """What to print for each task-tree event of each process (see the module docstring)."""

    def __init__(self) -> None:
        self.statuses: dict[str, dict[str, str]] = {}  # process id -> node id -> status
        self.finished: set[str] = set()  # processes whose finished tree was printed
        self.last_process: str | None = None  # the process whose tree changed last

    def update(self, process_id: str, tree: Any) -> list[Tree | Text]:
        nodes = tree_nodes(tree)
        now = {str(node["id"]): str(node.get("status") or "") for node in nodes}
        before = self.statuses.get(process_id)
        self.statuses[process_id] = now
        self.last_process = process_id
        all_finished = bool(nodes) and all(status in FINISHED for status in now.values())
        if before is None or set(before) != set(now):
            if all_finished:
                self.finished.add(process_id)
            return [task_tree(process_id, tree)]
        shown: list[Tree | Text] = [
            status_line(process_id, node)
            for node in nodes
            if before[node["id"]] != now[node["id"]] and not unfinished_worker(node)
        ]
        if all_finished and process_id not in self.finished and shown:
            self.finished.add(process_id)
            shown.append(task_tree(process_id, tree))
        elif not all_finished:
            self.finished.discard(process_id)
        return shown
