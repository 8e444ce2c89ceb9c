"""A person's requests about spaces (the `space-*` frames, REST): each finds what the user may
see (another user's space or node is a 404) and calls one use case."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spaces.actions import human
from spaces.presenters import space_data
from spaces.store import Snapshot, load, node_by_public_id, space_by_public_id
from vancetope.errors import BadRequest, NotFound

CONTROLS = {"space-checkpoint": "checkpoint", "space-return": "return"}


def as_data(snapshot: Snapshot) -> dict[str, Any]:
    return space_data(snapshot.space, snapshot.nodes)


def get_space(
    user: Any, *, space_id: str | None, node_id: str | None, session_id: int | None = None
) -> dict[str, Any]:
    """By space, by node, or (neither named) the space of the bound session's node."""
    if space_id is not None and node_id is not None:
        raise BadRequest("name data.spaceId or data.nodeId, not both")
    if space_id is None and node_id is None:
        from spaces.models import ThinkingNode

        found = ThinkingNode.objects.filter(
            session_id=session_id or 0, space__owner_id=user.pk
        ).first()
        if found is None:
            raise NotFound("this session is in no thinking space; name data.spaceId or nodeId")
        return as_data(load(found.space_id))
    if space_id is not None:
        return as_data(load(space_by_public_id(user, space_id).pk))
    return as_data(load(node_by_public_id(user, str(node_id)).space_id))


def split(user: Any, node_id: str, title: str, revision: int | None) -> dict[str, Any]:
    return as_data(human.split(node_by_public_id(user, node_id), title, revision=revision))


def rename(user: Any, node_id: str, title: str, revision: int | None) -> dict[str, Any]:
    return as_data(human.rename(node_by_public_id(user, node_id), title, revision=revision))


def first_prompt(user: Any, node_id: str, text: str) -> dict[str, Any]:
    """A blank branch's first prompt, admitted to its session (the client opens it next)."""
    return as_data(human.first_prompt(user, node_by_public_id(user, node_id), text))


def suggest(user: Any, session_id: int) -> dict[str, Any]:
    """The bound session's conversation as a space's root, its agent ordered to suggest the
    first branches (they arrive as a `space-state` event once it has)."""
    return as_data(human.suggest(user, session_id))


def retry_fork(user: Any, node_id: str) -> dict[str, Any]:
    return as_data(human.retry_fork(node_by_public_id(user, node_id)))


@dataclass(frozen=True)
class Began:
    """A control turn under way: its node, kind and the revision that locked the node."""

    node_pk: int
    kind: str
    revision: int


def begin_control(user: Any, frame_type: str, node_id: str, revision: int | None) -> Began:
    node = node_by_public_id(user, node_id)
    kind = CONTROLS[frame_type]
    begin = human.begin_checkpoint if kind == "checkpoint" else human.begin_return
    after = begin(node, revision=revision)
    return Began(node.pk, kind, after.space.revision)


def control_result(began: Began) -> tuple[str | None, dict[str, Any]]:
    """(None: still on; "": verified; else why it failed) and the space as it is."""
    outcome = human.control_outcome(began.node_pk, began.kind, began.revision)
    from spaces.models import ThinkingNode

    space_pk = ThinkingNode.objects.values_list("space_id", flat=True).get(pk=began.node_pk)
    return outcome, as_data(load(space_pk)) if outcome is not None else {}


def give_up(began: Began) -> None:
    human.end_control(began.node_pk, began.kind, "the control turn timed out", by=human.HUMAN)
