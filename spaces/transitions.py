"""The one writer of a thinking space: every mutation is a compare-and-swap on `revision`.

| call          | allowed in                    | result              |
| ------------- | ----------------------------- | ------------------- |
| create        | (new node)                    | dormant, active (the root) or forkHandoffPending |
| activate      | dormant                       | active              |
| complete-fork | forkHandoffPending            | dormant             |
| begin-return  | active                        | returning           |
| return        | active, returning             | returned            |
| restore       | returning                     | active              |

A mutation is computed from the space as it was read (spaces/rules.py checked it), then
`commit` writes it in one transaction: the space's row moves from the revision it was read at
to the next one only if nobody moved it first (else StaleRevision, and nothing is written),
the nodes are inserted or changed, every lifecycle change leaves a NodeTransition row and the
mutation a SpaceChange row, and the whole space is stored as a `space-state` event for every
open session of the space. Nothing else writes a space or a node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.utils import timezone

from protocol.outbound import SpaceStateEvent, event
from sessions_app.events import emit_event
from sessions_app.models import Session, SessionStatus
from spaces.models import NodeState, NodeTransition, SpaceChange, ThinkingNode, ThinkingSpace
from spaces.rules import StaleRevision
from vancetope import statemachine
from vancetope.statemachine import Rule


class NodeCall(StrEnum):
    CREATE = "create"
    ACTIVATE = "activate"
    COMPLETE_FORK = "complete-fork"
    BEGIN_RETURN = "begin-return"
    RETURN = "return"
    RESTORE = "restore"
    # Not a state: the checkpoint lock is taken or let go (recorded all the same).
    LOCK_CHECKPOINT = "lock-checkpoint"
    CHECKPOINT = "checkpoint"
    UNLOCK_CHECKPOINT = "unlock-checkpoint"


S = NodeState
TRANSITIONS: dict[NodeCall, Rule[NodeState]] = {
    NodeCall.ACTIVATE: Rule(frozenset({S.DORMANT}), S.ACTIVE),
    NodeCall.COMPLETE_FORK: Rule(frozenset({S.FORK_PENDING}), S.DORMANT),
    NodeCall.BEGIN_RETURN: Rule(frozenset({S.ACTIVE}), S.RETURNING),
    NodeCall.RETURN: Rule(frozenset({S.ACTIVE, S.RETURNING}), S.RETURNED),
    NodeCall.RESTORE: Rule(frozenset({S.RETURNING}), S.ACTIVE),
}


@dataclass
class Mutation:
    """What one mutation writes: new nodes, field changes of existing ones, and the lifecycle
    calls it makes (node, call); `kind` and `by` name it in its SpaceChange row."""

    kind: str
    by: str
    node: ThinkingNode | None = None
    new_nodes: list[ThinkingNode] = field(default_factory=list)
    changes: dict[int, dict[str, Any]] = field(default_factory=dict)
    # (node, call, from state, to state, detail), in the order made.
    calls: list[tuple[ThinkingNode, NodeCall, str, str, str]] = field(default_factory=list)
    # Run in the transaction once the new nodes have their ids (marking their chat processes).
    after_save: list[Callable[[], None]] = field(default_factory=list)

    def change(self, node: ThinkingNode, **fields: Any) -> None:
        self.changes.setdefault(node.pk, {}).update(fields)

    def move(self, node: ThinkingNode, call: NodeCall, detail: str = "") -> None:
        """A lifecycle call, checked against the table now (a 409 before anything is written)
        from the state the mutation has left the node in so far."""
        state = self.state_of(node)
        to = state
        if call in TRANSITIONS:
            rule = statemachine.check(TRANSITIONS, call, state, f"node {node.public_id}")
            to = rule.target()
            self.change(node, state=to)
        self.calls.append((node, call, "" if call == NodeCall.CREATE else state, to, detail))

    def state_of(self, node: ThinkingNode) -> str:
        return str(self.changes.get(node.pk, {}).get("state", node.state))


def commit(space: ThinkingSpace, mutation: Mutation) -> ThinkingSpace:
    """Write `mutation` of `space` (as read, at `space.revision`): the space at its new
    revision, or StaleRevision with nothing written."""
    read_at = space.revision
    now = timezone.now()
    with transaction.atomic():
        moved = ThinkingSpace.objects.filter(pk=space.pk, revision=read_at).update(
            revision=read_at + 1, updated_at=now
        )
        if moved != 1:
            raise StaleRevision(space.public_id, read_at)
        revision = read_at + 1
        for node in mutation.new_nodes:
            node.space = space
            node.created_at = node.updated_at = now
            node.save()
        for node_pk, fields in mutation.changes.items():
            ThinkingNode.objects.filter(pk=node_pk, space=space).update(**fields, updated_at=now)
        for then in mutation.after_save:
            then()
        NodeTransition.objects.bulk_create(
            [
                NodeTransition(
                    node_id=node.pk,
                    call=call,
                    from_state=from_state,
                    to_state=to_state,
                    revision=revision,
                    detail=detail,
                    at=now,
                )
                for node, call, from_state, to_state, detail in mutation.calls
            ]
        )
        SpaceChange.objects.create(
            space=space, revision=revision, kind=mutation.kind, node=mutation.node, by=mutation.by
        )
        space.revision, space.updated_at = revision, now
        announce(space)
    return space


def announce(space: ThinkingSpace) -> None:
    """The whole space as a `space-state` event, stored for every open session of its nodes
    (in session order, so concurrent writers lock the sessions in the same order)."""
    from spaces.presenters import space_data

    data = event(SpaceStateEvent.model_validate({"space": space_data(space)}))
    sessions = Session.objects.filter(thinking_node__space=space, status=SessionStatus.OPEN)
    for session_id in sessions.order_by("pk").values_list("pk", flat=True):
        emit_event(session_id, *data)
