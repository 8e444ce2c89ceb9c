"""The thinking_* tools' use cases: what a node's own agent does to its space.

Each is one mutation (spaces/store.py `mutate`): checked against the space as read, written
by compare-and-swap. The caller is a chat process; its node is the one whose chat process it
is. A node whose agent acts has begun its conversation: a dormant node becomes active first.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from processes.models import ThinkProcess
from sessions_app.models import Session
from spaces import rules
from spaces.actions import notices
from spaces.actions.nodes import dispose, mark_chat_process, open_node_session
from spaces.models import NodeState, SpaceChange, ThinkingNode, ThinkingSpace
from spaces.rules import Limits
from spaces.store import Snapshot, load, mutate, node_of_process
from spaces.transitions import Mutation, NodeCall, announce
from vancetope.errors import Conflict

AGENT = "agent"


@dataclass(frozen=True)
class NewChild:
    title: str
    handoff: str  # "" for a human split's child: its parent's agent writes it later
    state: NodeState


def start_space(process_id: int) -> Snapshot:
    """The space of the caller's session: made, with the caller's node as its root, unless
    the session is a node already (idempotent per session)."""
    found = node_of_process(process_id)
    if found is not None:
        return load(found.space_id)
    process = ThinkProcess.objects.select_related("session").get(pk=process_id)
    session: Session = process.session
    if session.chat_process_id != process.pk:
        raise Conflict("only a session's chat process starts a thinking space; a worker does not")
    try:
        with transaction.atomic():
            space = ThinkingSpace.objects.create(project_id=session.project_id, owner=session.owner)
            root = ThinkingNode.objects.create(
                space=space,
                session=session,
                chat_process=process,
                title="Root",
                state=NodeState.ACTIVE,
            )
            space.root_node = root
            space.save(update_fields=["root_node"])
            SpaceChange.objects.create(space=space, revision=1, kind="start", node=root, by=AGENT)
            mark_chat_process(root)
            announce(ThinkingSpace.objects.select_related("project").get(pk=space.pk))
    except IntegrityError:
        # Another call of the same session made it first.
        again = node_of_process(process_id)
        if again is None:
            raise
        return load(again.space_id)
    return load(space.pk)


def caller_node(process_id: int) -> ThinkingNode:
    node = node_of_process(process_id)
    if node is None:
        raise Conflict("this conversation is not in a thinking space: call thinking_start first")
    return node


def _begun(mutation: Mutation, node: ThinkingNode) -> None:
    if mutation.state_of(node) == NodeState.DORMANT:
        mutation.move(node, NodeCall.ACTIVATE, "its agent acted")


def add_children(
    node: ThinkingNode,
    children: list[NewChild],
    *,
    kind: str,
    by: str,
    revision: int | None = None,
) -> tuple[Snapshot, list[ThinkingNode]]:
    """New children of `node`, each with its own session (made before the mutation, disposed
    if it is refused)."""
    limits = Limits.configured()
    checked = [
        NewChild(
            rules.check_title(
                child.title, limits, f"children/{n}/title" if kind == "suggest" else "title"
            ),
            rules.check_handoff(
                child.handoff, limits, f"children/{n}/handoff" if kind == "suggest" else "handoff"
            )
            if child.handoff
            else "",
            child.state,
        )
        for n, child in enumerate(children)
    ]

    def checks(snapshot: Snapshot) -> ThinkingNode:
        parent = snapshot.node(node.pk)
        if kind == "suggest":
            if parent.parent_id is not None:
                raise Conflict("thinking_suggest is for the root only; split instead")
            rules.check_suggest(snapshot.nodes, parent, len(checked))
        rules.check_split(snapshot.nodes, parent, len(checked), limits)
        return parent

    first = load(node.space_id)
    checks(first)
    sessions = [open_node_session(first.space, first.node(node.pk)) for _ in checked]
    made: list[ThinkingNode] = []

    def build(snapshot: Snapshot) -> Mutation:
        parent = checks(snapshot)
        mutation = Mutation(kind=kind, by=by, node=parent)
        if by == AGENT:
            _begun(mutation, parent)
        order = max((c.sort_order for c in snapshot.children(parent)), default=-1) + 1
        made.clear()
        for offset, (child, session) in enumerate(zip(checked, sessions, strict=True)):
            new = ThinkingNode(
                parent=parent,
                depth=parent.depth + 1,
                sort_order=order + offset,
                session=session,
                chat_process_id=_chat_of(session),
                title=child.title,
                state=child.state,
                inherited_handoff=child.handoff,
            )
            made.append(new)
            mutation.new_nodes.append(new)
            mutation.move(new, NodeCall.CREATE, child.state)
            mutation.after_save.append(functools.partial(mark_chat_process, new))
        return mutation

    try:
        after = mutate(node.space_id, build, revision=revision)
    except Exception:
        dispose(sessions)
        raise
    return after, made


def suggest(process_id: int, children: list[tuple[str, str]]) -> Snapshot:
    node = caller_node(process_id)
    wanted = [NewChild(title, handoff, NodeState.DORMANT) for title, handoff in children]
    return add_children(node, wanted, kind="suggest", by=AGENT)[0]


def split(process_id: int, title: str, handoff: str) -> tuple[Snapshot, ThinkingNode]:
    node = caller_node(process_id)
    after, [child] = add_children(
        node, [NewChild(title, handoff, NodeState.DORMANT)], kind="split", by=AGENT
    )
    return after, child


def fork_handoff(process_id: int, node_id: str | None, handoff: str) -> Snapshot:
    """Complete the pending child of a human split of the caller's node."""
    node = caller_node(process_id)
    text = rules.check_handoff(handoff, Limits.configured())

    def build(snapshot: Snapshot) -> Mutation:
        parent = snapshot.node(node.pk)
        rules.check_open(parent, "write a fork Handoff of")
        pending = [c for c in snapshot.children(parent) if c.state == NodeState.FORK_PENDING]
        if node_id is not None:
            chosen = [c for c in snapshot.children(parent) if c.public_id == node_id]
            if not chosen:
                raise Conflict(f"{node_id} is not a child of {parent.public_id}")
            child = chosen[0]
            rules.check_fork_pending(child)
        elif len(pending) == 1:
            child = pending[0]
        else:
            raise Conflict(
                f"{len(pending)} forks of {parent.public_id} are pending: name one with nodeId"
                if pending
                else f"no fork of {parent.public_id} is pending"
            )
        mutation = Mutation(kind="fork-handoff", by=AGENT, node=child)
        _begun(mutation, parent)
        mutation.change(child, inherited_handoff=text)
        mutation.move(child, NodeCall.COMPLETE_FORK, "its parent's agent wrote its Handoff")
        return mutation

    return mutate(node.space_id, build)


def checkpoint(process_id: int, handoff: str) -> Snapshot:
    """Publish the node's current state for its siblings; a refresh lock is let go."""
    node = caller_node(process_id)
    text = rules.check_handoff(handoff, Limits.configured())

    def build(snapshot: Snapshot) -> Mutation:
        current = snapshot.node(node.pk)
        rules.check_checkpoint(current)
        mutation = Mutation(kind="checkpoint", by=AGENT, node=current)
        _begun(mutation, current)
        mutation.change(current, checkpoint_handoff=text, checkpoint_refreshing_at=None)
        mutation.move(current, NodeCall.CHECKPOINT)
        return mutation

    return mutate(node.space_id, build)


def return_node(process_id: int, handoff: str) -> Snapshot:
    """Publish the final Handoff to the parent and seal the node; the parent hears of it by
    one notice in its conversation (never woken)."""
    node = caller_node(process_id)
    text = rules.check_handoff(handoff, Limits.configured())

    def build(snapshot: Snapshot) -> Mutation:
        current = snapshot.node(node.pk)
        mutation = Mutation(kind="return", by=AGENT, node=current)
        if current.state == NodeState.DORMANT:
            _begun(mutation, current)
            current.state = NodeState.ACTIVE  # checked as begun: this turn is its agent's
        rules.check_return(snapshot.nodes, current, empty=False, running=False, by_agent=True)
        mutation.change(
            current, returned_handoff=text, checkpoint_refreshing_at=None, notice_pending=True
        )
        mutation.move(current, NodeCall.RETURN)
        return mutation

    after = mutate(node.space_id, build)
    notices.deliver_notices(after.node(node.pk).parent_id)
    return after


def rename(node: ThinkingNode, title: str, *, by: str, revision: int | None = None) -> Snapshot:
    cleaned = rules.check_title(title, Limits.configured())

    def build(snapshot: Snapshot) -> Mutation:
        current = snapshot.node(node.pk)
        rules.check_open(current, "rename")
        mutation = Mutation(kind="rename", by=by, node=current)
        mutation.change(current, title=cleaned)
        return mutation

    return mutate(node.space_id, build, revision=revision)


def _chat_of(session: Session) -> int:
    assert session.chat_process_id is not None  # a node's session has its chat process
    return session.chat_process_id
