"""The task tree on the admin's process page: a nested list of its nodes (the typed tree of
engines/tasktree.py) with their status, worker and result, the same colours as the web UI's
legend."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from engines.tasktree import FINISHED, TaskNode, TaskTree

# The task tree's status colours, the same as the web UI's legend (webui.css).
NODE_COLOURS = {
    "PENDING": "#8a94a3",
    "RUNNING": "#2456c7",
    "BLOCKED": "#c98a00",
    "DONE": "#1f7a3d",
    "FAILED": "#b3261e",
    "SKIPPED": "#8a94a3",
}
WORKER_ID = re.compile(r"^tp_(\d+)$")
# How much of a node's result or error the tree shows; the raw JSON below it has all of it.
SHOWN_CHARS = 160


def _duration(node: TaskNode) -> str:
    if node.startedAt is None or node.finishedAt is None:
        return ""
    try:
        started = datetime.fromisoformat(node.startedAt)
        finished = datetime.fromisoformat(node.finishedAt)
    except ValueError:
        return ""
    return f"{(finished - started).total_seconds():.1f} s"


def _shown(value: Any) -> str:
    """A result or error in one short line; a structured result by its summary."""
    if isinstance(value, dict) and isinstance(value.get("summary"), str):
        value = value["summary"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _node_line(node: TaskNode) -> SafeString:
    parts = [
        format_html(
            '<span class="node-status" style="color: {}; font-weight: bold">● {}</span> '
            "<small>{}</small> {} <small>({})</small>",
            NODE_COLOURS.get(node.status, "#8a94a3"),
            node.status,
            node.kind,
            node.title or node.goal or node.id,
            node.id,
        )
    ]
    if duration := _duration(node):
        parts.append(format_html(" · {}", duration))
    if node.replanOf:
        parts.append(
            format_html(
                ' · <span style="color: #7a5400">re-plan of {}</span>', ", ".join(node.replanOf)
            )
        )
    if node.attempts is not None and node.attempts > 1:
        parts.append(format_html(" · attempt {}", node.attempts))
    if node.dependsOn:
        parts.append(format_html(" · after {}", ", ".join(node.dependsOn)))
    worker = WORKER_ID.match(node.processId or "")
    if worker:
        url = reverse("admin:processes_thinkprocess_change", args=[int(worker.group(1))])
        parts.append(format_html(' · worker <a href="{}">{}</a>', url, worker.group(0)))
    if node.error:
        parts.append(format_html(' · <span style="color: #b3261e">{}</span>', _shown(node.error)))
    elif node.result not in (None, ""):
        parts.append(format_html(" · result: {}", _shown(node.result)))
    if isinstance(node.result, dict | list):
        # A structured result, whole, one click away.
        parts.append(
            format_html(
                '<details class="node-result"><summary>structured result</summary>'
                '<pre style="white-space: pre-wrap">{}</pre></details>',
                json.dumps(node.result, indent=2, ensure_ascii=False),
            )
        )
    return format_html_join("", "{}", ((part,) for part in parts))


def tree_heading(tree: TaskTree) -> str:
    """How far the tree is: finished, running at once, failed, re-plans."""
    nodes = tree.nodes
    done = sum(1 for node in nodes if node.status in FINISHED)
    text = f"{done} of {len(nodes)} nodes finished"
    running = sum(1 for n in nodes if n.kind == "WORKER" and n.status == "RUNNING")
    if running > 1:
        text += f" · {running} workers running at once"
    if failed := sum(1 for node in nodes if node.status == "FAILED"):
        text += f" · {failed} failed"
    if replans := sum(1 for node in nodes if node.replanOf):
        text += f" · {replans} re-plan{'s' if replans > 1 else ''}"
    return text


def task_tree_html(tree: TaskTree) -> SafeString:
    """The tree as nested lists, each node with its status colour, kind, title, duration, its
    worker process linked to that process's admin page, and its error or result."""
    ids = {node.id for node in tree.nodes}
    below: dict[str | None, list[TaskNode]] = {}
    for node in tree.nodes:
        parent = node.parentId
        below.setdefault(parent if parent in ids and parent != node.id else None, []).append(node)
    drawn: set[str] = set()

    def level(parent: str | None) -> SafeString:
        items = []
        for node in below.get(parent, []):
            if node.id in drawn:
                continue  # a cycle of parent ids: each node once
            drawn.add(node.id)
            items.append((node.id, node.status, _node_line(node), level(node.id)))
        if not items:
            return SafeString("")
        return format_html(
            '<ul class="task-tree-nodes">{}</ul>',
            format_html_join("", '<li data-node="{}" data-status="{}">{}{}</li>', items),
        )

    return level(None)
