"""A person's controls of a space (the `space-*` frames): split, retry a fork, checkpoint,
return, rename.

Checkpoint and return are control turns of the node's own agent, never a Handoff the person
writes: the node is locked (`checkpointRefreshingAt`, or `returning`), a `[control: …]` message
goes to its chat process, and the request succeeds only once the new state is verified
(`control_outcome`). A human split's child waits (`forkHandoffPending`) for its parent's agent
to write its inherited Handoff in a `[control: fork handoff node_N]` turn; a parent whose
conversation is empty gets a ready child with no Handoff at all (nothing is made up).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from processes.actions.pending import deliver
from processes.actions.unsend import withdraw_order
from processes.models import ConversationMessage, PendingKind, PendingMessage, ThinkProcess
from processes.states import Status
from spaces import rules
from spaces.actions.agent import NewChild, add_children
from spaces.models import NodeState, NodeTransition, ThinkingNode
from spaces.store import Snapshot, load, mutate
from spaces.transitions import Mutation, NodeCall
from vancetope.errors import Conflict

HUMAN = "human"
SYSTEM = "system"

CHECKPOINT_ORDER = (
    "[control: checkpoint]\nThe person asks for this branch's current state. Call "
    "thinking_checkpoint once with a Markdown Handoff of where this branch stands now (what "
    "is settled, what is open), for the sibling branches to read."
)
RETURN_ORDER = (
    "[control: return]\nThe person asks this branch to return. Call thinking_return once with "
    "the final Markdown Handoff for the parent branch (the conclusion, its grounds, what stays "
    "open). The branch is sealed after it."
)


SUGGEST_ORDER = (
    "[control: suggest]\nThe person asks for the first branches of this thinking space. Call "
    "thinking_suggest once with 2 to 4 children, each a short title and a Markdown Handoff "
    "that tells that branch what to explore and what it needs from this conversation."
)


def fork_order(child: ThinkingNode) -> str:
    return (
        f"[control: fork handoff {child.public_id}]\nThe person split a new branch "
        f"“{child.title}” off this one. Call thinking_fork_handoff with nodeId "
        f"{child.public_id} and a Markdown Handoff that gives that branch what it needs of "
        "this conversation to start on its own (it sees nothing else of it)."
    )


def has_conversation(node: ThinkingNode) -> bool:
    return ConversationMessage.objects.filter(
        process_id=node.chat_process_id, undone_at__isnull=True
    ).exists()


def _order(node: ThinkingNode, text: str) -> None:
    """A control turn of the node's agent (the message wakes an idle agent)."""
    if deliver(node.chat_process_id, PendingKind.CONTROL, {"text": text}) is None:
        raise Conflict(f"the agent of {node.public_id} is closed")


def split(node: ThinkingNode, title: str, *, revision: int | None = None) -> Snapshot:
    empty = not has_conversation(node)
    state = NodeState.DORMANT if empty else NodeState.FORK_PENDING
    after, [child] = add_children(
        node, [NewChild(title, "", state)], kind="human-split", by=HUMAN, revision=revision
    )
    if not empty:
        _order(after.node(node.pk), fork_order(child))
    return after


def first_prompt(user: Any, node: ThinkingNode, text: str) -> Snapshot:
    """A person's first message to a blank branch, before they open it: admitted to the
    node's own session as its chat message (what the branch's agent then answers). Refused
    (409, nothing queued) for a branch that has begun its conversation (open it instead), one
    that waits for its fork Handoff, and one that returns or returned."""
    from processes.actions.steer import send_chat

    snapshot = load(node.space_id)
    current = snapshot.node(node.pk)
    if current.state in (NodeState.RETURNING, NodeState.RETURNED, NodeState.FORK_PENDING):
        raise Conflict(f"{current.public_id} is {current.state}: it takes no first prompt")
    begun = PendingMessage.objects.filter(
        process_id=current.chat_process_id, undone_at__isnull=True
    ).exclude(kind=PendingKind.CONTROL)
    if has_conversation(current) or begun.exists():
        raise Conflict(f"{current.public_id} has begun its conversation: open it to go on")
    send_chat(current.session_id, text, user=user)
    return snapshot


def suggest(user: Any, session_id: int) -> Snapshot:
    """A person's `space-suggest`: the session's conversation becomes a space's root (if it is
    not one yet), and its agent gets a `[control: suggest]` turn. Refused (409) once the root
    has children: suggestions are the first branches only."""
    from sessions_app.models import Session
    from spaces.actions.agent import start_space

    session = Session.objects.filter(pk=session_id, owner_id=user.pk).first()
    if session is None or session.chat_process_id is None:
        raise Conflict("this session has no chat process to start a thinking space with")
    snapshot = start_space(session.chat_process_id)
    root = snapshot.root
    if snapshot.children(root):
        raise Conflict(f"{root.public_id} already has children: suggestions are the first ones")
    _order(root, SUGGEST_ORDER)
    return snapshot


def retry_fork(child: ThinkingNode) -> Snapshot:
    """Ask the parent's agent again for a pending child's Handoff (its last turn did not)."""
    snapshot = load(child.space_id)
    current = snapshot.node(child.pk)
    rules.check_fork_pending(current)
    assert current.parent_id is not None
    _order(snapshot.node(current.parent_id), fork_order(current))
    return snapshot


def rename(node: ThinkingNode, title: str, *, revision: int | None = None) -> Snapshot:
    from spaces.actions.agent import rename as rename_node

    return rename_node(node, title, by=HUMAN, revision=revision)


def _running(node: ThinkingNode) -> bool:
    status = ThinkProcess.objects.filter(pk=node.chat_process_id).values_list("status", flat=True)
    return status.first() == Status.RUNNING


def begin_checkpoint(node: ThinkingNode, *, revision: int | None = None) -> Snapshot:
    def build(snapshot: Snapshot) -> Mutation:
        current = snapshot.node(node.pk)
        rules.check_checkpoint(current)
        if current.checkpoint_refreshing_at is not None:
            raise Conflict(f"{current.public_id} is refreshing its checkpoint already")
        mutation = Mutation(kind="checkpoint-begin", by=HUMAN, node=current)
        mutation.change(current, checkpoint_refreshing_at=timezone.now())
        mutation.move(current, NodeCall.LOCK_CHECKPOINT)
        return mutation

    after = mutate(node.space_id, build, revision=revision)
    try:
        _order(node, CHECKPOINT_ORDER)
    except Conflict:
        end_control(node.pk, "checkpoint", "its agent is closed")
        raise
    return after


def begin_return(node: ThinkingNode, *, revision: int | None = None) -> Snapshot:
    empty = not has_conversation(node)
    running = _running(node)

    def build(snapshot: Snapshot) -> Mutation:
        current = snapshot.node(node.pk)
        rules.check_return(snapshot.nodes, current, empty=empty, running=running)
        mutation = Mutation(kind="return-begin", by=HUMAN, node=current)
        if current.state == NodeState.DORMANT:
            mutation.move(current, NodeCall.ACTIVATE, "its conversation began")
        mutation.move(current, NodeCall.BEGIN_RETURN)
        return mutation

    after = mutate(node.space_id, build, revision=revision)
    try:
        _order(node, RETURN_ORDER)
    except Conflict:
        end_control(node.pk, "return", "its agent is closed")
        raise
    return after


def control_outcome(node_pk: int, kind: str, since_revision: int) -> str | None:
    """None while the control turn is still on; then "" (verified) or why it failed."""
    node = ThinkingNode.objects.get(pk=node_pk)
    if kind == "checkpoint":
        if node.checkpoint_refreshing_at is not None:
            return None
        written = NodeTransition.objects.filter(
            node_id=node_pk, call=NodeCall.CHECKPOINT, revision__gt=since_revision
        ).exists()
        return "" if written else "the agent wrote no checkpoint; the previous one is kept"
    if node.state == NodeState.RETURNING:
        return None
    if node.state == NodeState.RETURNED:
        return ""
    return "the agent did not return; the branch is active again"


def end_control(node_pk: int, kind: str, why: str, by: str = SYSTEM) -> Snapshot:
    """Let go of a control turn's lock that is still held: a checkpoint keeps its previous
    value, a return restores `active` (nothing is written if nothing is held); its order, if
    no turn has read it, is withdrawn."""
    node = ThinkingNode.objects.get(pk=node_pk)
    # The order still unread (its turn never came: the agent waits for its provider, or the
    # person gave up waiting) is withdrawn, so no later turn obeys it: a return the person was
    # told had failed must not seal the branch afterwards.
    withdraw_order(node.chat_process_id, CHECKPOINT_ORDER if kind == "checkpoint" else RETURN_ORDER)

    def build(snapshot: Snapshot) -> Mutation | None:
        current = snapshot.node(node_pk)
        mutation = Mutation(kind=f"{kind}-failed", by=by, node=current)
        if kind == "checkpoint" and current.checkpoint_refreshing_at is not None:
            mutation.change(current, checkpoint_refreshing_at=None)
            mutation.move(current, NodeCall.UNLOCK_CHECKPOINT, why)
        elif kind == "return" and current.state == NodeState.RETURNING:
            mutation.move(current, NodeCall.RESTORE, why)
        else:
            return None
        return mutation

    return mutate(node.space_id, build)


def describe(snapshot: Snapshot) -> dict[str, Any]:
    from spaces.presenters import space_data

    return space_data(snapshot.space, snapshot.nodes)
