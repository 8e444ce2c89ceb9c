"""A person's orders about one node of a process's task tree (the protocol's task tree object,
typed by engines/tasktree.py).

The tree is the engine's (marvin keeps it in `engine_state["taskTree"]`), so an order is checked
here against the tree as it is now and then delivered to the process as a CONTROL message; the
engine carries it out in its lane, where it checks the node again (it may have finished since).
"""

from __future__ import annotations

from engines.messages import CANCEL_NODE
from engines.tasktree import OPEN, TaskTree
from processes.actions.pending import deliver
from processes.models import PendingKind, ThinkProcess
from processes.states import Status
from vancetope.errors import Conflict, NotFound


def cancel_task_node(process: ThinkProcess, node_id: str) -> int:
    """Cancel a node that has not finished: a pending one is skipped, a running worker is
    stopped, a question is dropped. The seq of the order."""
    if process.status == Status.CLOSED:
        raise Conflict(f"process {process.public_id} is CLOSED")
    tree = TaskTree.of(process.engine_state)  # one of another shape has no node to name
    if tree is None:
        raise NotFound(f"process {process.public_id} has no task tree")
    node = tree.find(node_id)
    if node is None:
        raise NotFound(f"node {node_id} not found in the task tree of {process.public_id}")
    if node.status not in OPEN:
        raise Conflict(
            f"node {node_id} is {node.status}: only a PENDING, RUNNING or BLOCKED node "
            "can be cancelled"
        )
    order = {"text": CANCEL_NODE, "args": {"nodeId": node_id}}
    message = deliver(process.pk, PendingKind.CONTROL, order)
    if message is None:
        raise Conflict(f"process {process.public_id} is CLOSED")
    return message.seq
