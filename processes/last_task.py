"""Each listed process's last task: the node of its task tree that runs (or ran last), else the
turn it runs (or ran last). A list reads it in its own statement, whatever its length: the turns
are subqueries of the list's query, the tree is on the row.

The object (`lastTask` of a process-list row, REST and WebSocket alike):
`{"kind": "node", "id", "title", "status"}` (a task-tree node and its status) or
`{"kind": "turn", "id": null, "title", "status"}` (the first line of the message the turn ran
on; status RUNNING while it runs, DONE once it committed), or null when the process has done
nothing yet.
"""

from __future__ import annotations

from typing import Any

from django.db.models import JSONField, OuterRef, QuerySet, Subquery

from engines.messages import parse
from engines.tasktree import TaskNode, TaskTree
from processes.models import PendingMessage, ThinkProcess
from processes.states import Status

TITLE_CHARS = 120
# A node in one of these is where the work is now.
AT_WORK = ("RUNNING", "BLOCKED")


def with_last_turn(rows: QuerySet[ThinkProcess]) -> QuerySet[ThinkProcess]:
    """The rows with their newest committed turn and their oldest waiting message (the one a
    RUNNING process runs now), as subqueries of the same statement."""
    kept = PendingMessage.objects.filter(process_id=OuterRef("pk"), undone_at__isnull=True)
    ran = kept.filter(consumed=True, consumed_fence__isnull=False).order_by("-seq")
    waiting = kept.filter(consumed=False).order_by("seq")
    return rows.annotate(
        ran_kind=Subquery(ran.values("kind")[:1]),
        ran_payload=Subquery(ran.values("payload")[:1], output_field=JSONField()),
        waiting_kind=Subquery(waiting.values("kind")[:1]),
        waiting_payload=Subquery(waiting.values("payload")[:1], output_field=JSONField()),
    )


def last_task(process: ThinkProcess) -> dict[str, Any] | None:
    """The process's last task (a row of `with_last_turn`)."""
    tree = TaskTree.of(process.engine_state)
    node = _last_node(tree) if tree is not None else None
    if node is not None:
        return {"kind": "node", "id": node.id, "title": node.title, "status": node.status}
    waiting = getattr(process, "waiting_kind", None)
    if process.status == Status.RUNNING and waiting:
        return _turn(waiting, getattr(process, "waiting_payload", None), "RUNNING")
    ran = getattr(process, "ran_kind", None)
    if ran:
        return _turn(ran, getattr(process, "ran_payload", None), "DONE")
    return None


def _turn(kind: str, payload: Any, status: str) -> dict[str, Any]:
    text = parse(kind, 0, payload if isinstance(payload, dict) else {}).prompt_text()
    first = text.strip().splitlines()[0] if text.strip() else kind
    return {"kind": "turn", "id": None, "title": first[:TITLE_CHARS], "status": status}


def _last_node(tree: TaskTree) -> TaskNode | None:
    """The node at work that started last, else the node that finished last."""
    working = [node for node in tree.nodes if node.status in AT_WORK]
    if working:
        return max(working, key=lambda node: node.startedAt or "")
    finished = [node for node in tree.nodes if node.finishedAt]
    if finished:
        return max(finished, key=lambda node: node.finishedAt or "")
    return None
