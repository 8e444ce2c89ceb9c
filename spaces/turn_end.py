"""The end of a node's turn (the process_settled signal's receiver, spaces/receivers.py).

Called whenever a lane's run leaves a process at rest; costs nothing for a process that is no
node's chat process (the marker in its engine_params says). For a node: a dormant node whose
conversation has begun is active; a control turn that ended without its tool call lets go of
its lock (a checkpoint keeps the previous value, a return restores `active`); notices of
returned children that waited for this turn to end are appended now.
"""

from __future__ import annotations

import logging

from processes.models import ThinkProcess
from spaces.actions import human, notices
from spaces.actions.nodes import NODE_MARKER
from spaces.models import NodeState
from spaces.store import Snapshot, mutate, node_of_process
from spaces.transitions import Mutation, NodeCall
from vancetope.errors import Conflict

log = logging.getLogger(__name__)


def node_settled(process: ThinkProcess, status: str, reason: str) -> None:
    if not process.engine_params.get(NODE_MARKER):
        return
    node = node_of_process(process.pk)
    if node is None:
        return
    if node.state == NodeState.DORMANT and process.conversation_length > 0:

        def build(snapshot: Snapshot) -> Mutation | None:
            current = snapshot.node(node.pk)
            if current.state != NodeState.DORMANT:
                return None
            mutation = Mutation(kind="activate", by=human.SYSTEM, node=current)
            mutation.move(current, NodeCall.ACTIVATE, "its conversation began")
            return mutation

        mutate(node.space_id, build)
    if node.checkpoint_refreshing_at is not None:
        human.end_control(node.pk, "checkpoint", "the control turn ended without a checkpoint")
    if node.state == NodeState.RETURNING:
        human.end_control(node.pk, "return", "the control turn ended without a return")
    notices.deliver_notices(node.pk)


def refuse_read_only(process: ThinkProcess) -> None:
    """A person's message to a node's chat process, refused while the node is read-only: a
    human split's child until its parent's agent wrote the fork Handoff, and a returned
    (sealed) branch. Costs nothing for a process that is no node's chat process."""
    if not process.engine_params.get(NODE_MARKER):
        return
    node = node_of_process(process.pk)
    if node is None:
        return
    if node.state == NodeState.FORK_PENDING:
        raise Conflict(
            f"{node.public_id} waits for its fork Handoff from its parent's agent and is "
            "read-only until then; retry the fork (space-fork-retry) if it failed"
        )
    if node.state == NodeState.RETURNED:
        raise Conflict(f"{node.public_id} is returned and sealed: its conversation is read-only")
