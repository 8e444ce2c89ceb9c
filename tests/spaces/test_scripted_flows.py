"""The Done-when flows of thinking spaces, driven by arthur and the scripted provider."""

from __future__ import annotations

from typing import Any

import pytest

from processes.actions import steer
from processes.models import ConversationMessage, ThinkProcess
from processes.states import Status
from spaces.actions import agent, human
from spaces.models import NodeState, ThinkingNode
from spaces.store import load
from tests.support.arthur import said
from tests.support.spaces import node, plant
from tests.support.waiting import wait_until

FOUR = [{"title": t, "handoff": f"Look at {t}."} for t in ("Moons", "Rings", "Storms", "Orbit")]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def idle(process_id: int | None) -> bool:
    assert process_id is not None
    return ThinkProcess.objects.get(pk=process_id).status == Status.IDLE


def tool_answers(process_id: int | None) -> list[str]:
    rows = ConversationMessage.objects.filter(process_id=process_id, role="tool").order_by("index")
    return list(rows.values_list("content", flat=True))


def settle(process_id: int | None, answers: int) -> list[str]:
    wait_until(lambda: idle(process_id) and len(tool_answers(process_id)) >= answers)
    return tool_answers(process_id)


@pytest.mark.django_db(transaction=True)
def test_suggest_makes_four_root_children_once_and_never_runs_them(root_session, script):
    # given an agent that starts a space and suggests four directions, twice
    script(
        [
            {
                "engine": "arthur",
                "match": "^explore Saturn$",
                "times": 1,
                "tool_calls": [
                    call("thinking_start"),
                    call("thinking_suggest", children=FOUR),
                    call("thinking_suggest", children=FOUR[:2]),
                ],
            },
            {"engine": "arthur", "reply": "Four directions are ready."},
        ]
    )
    root = root_session.chat_process_id
    # when the person asks
    steer.send_chat(root_session.pk, "explore Saturn")
    answers = settle(root, 3)
    # then the first batch made four dormant children, the second was refused
    space = load(ThinkingNode.objects.get(chat_process_id=root).space_id)
    children = space.children(space.root)
    assert [c.title for c in children] == ["Moons", "Rings", "Storms", "Orbit"]
    assert {c.state for c in children} == {NodeState.DORMANT}
    assert "already has children" in answers[2]
    # and no child's agent ran
    for child in children:
        assert not ConversationMessage.objects.filter(process_id=child.chat_process_id).exists()
    assert "Four directions are ready." in said(root_session, "assistant")


@pytest.mark.django_db(transaction=True)
def test_suggest_refuses_one_or_five_children(root_session):
    agent.start_space(root_session.chat_process_id)
    from vancetope.errors import BadRequest

    with pytest.raises(BadRequest, match="2 to 4"):
        agent.suggest(root_session.chat_process_id, [("a", "b")])
    assert len(load(node_of(root_session).space_id).nodes) == 1


def node_of(session):
    return ThinkingNode.objects.get(session_id=session.pk)


@pytest.mark.django_db(transaction=True)
def test_an_agent_split_makes_a_child_with_the_agents_handoff(root_session, script):
    script(
        [
            {
                "engine": "arthur",
                "match": "^split$",
                "times": 1,
                "tool_calls": [
                    call("thinking_start"),
                    call("thinking_split", title="Moons", handoff="Only the moons."),
                ],
            },
            {"engine": "arthur", "reply": "Split."},
        ]
    )
    steer.send_chat(root_session.pk, "split")
    settle(root_session.chat_process_id, 2)
    [child] = ThinkingNode.objects.filter(parent__isnull=False)
    assert (child.title, child.inherited_handoff, child.state) == (
        "Moons",
        "Only the moons.",
        NodeState.DORMANT,
    )


@pytest.mark.django_db(transaction=True)
def test_a_human_split_waits_for_the_parents_fork_handoff_and_a_failed_fork_is_retried(
    root_session, script
):
    # given a root with a conversation, whose first fork turn writes nothing
    script(
        [
            {"engine": "arthur", "match": r"^\[control: fork handoff", "times": 1, "reply": "Hm."},
            {
                "engine": "arthur",
                "match": r"^\[control: fork handoff",
                "tool_calls": [call("thinking_fork_handoff", handoff="Moons: 95 known.")],
            },
            {"engine": "arthur", "reply": "Done."},
        ]
    )
    agent.start_space(root_session.chat_process_id)
    root = node_of(root_session)
    plant(root, "we talked about Saturn")
    # when the person splits
    after = human.split(root, "Moons")
    child = next(n for n in after.nodes if n.parent_id == root.pk)
    # then the child waits, and still waits after the failed fork turn
    assert child.state == NodeState.FORK_PENDING
    # (the order's forced call is asked twice; neither answer calls the tool)
    failed = "I could not do that: step control: no thinking_fork_handoff call in the answer"
    wait_until(lambda: failed in said(root_session, "assistant"))
    wait_until(lambda: idle(root.chat_process_id))
    assert node(child.public_id).state == NodeState.FORK_PENDING
    # when the person retries
    human.retry_fork(node(child.public_id))
    # then the parent's agent writes its Handoff and the child is ready
    wait_until(lambda: node(child.public_id).state == NodeState.DORMANT)
    assert node(child.public_id).inherited_handoff == "Moons: 95 known."


@pytest.mark.django_db(transaction=True)
def test_a_human_split_of_an_empty_parent_is_ready_without_a_handoff(root_session):
    agent.start_space(root_session.chat_process_id)
    after = human.split(node_of(root_session), "Blank")
    [child] = [n for n in after.nodes if n.parent_id is not None]
    assert (child.state, child.inherited_handoff) == (NodeState.DORMANT, "")


def checkpoint_script(first_fails: bool) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    if first_fails:
        rules.append(
            {
                "engine": "arthur",
                "match": r"^\[control: checkpoint",
                "times": 1,
                "reply": "I will not.",
            }
        )
    rules.append(
        {
            "engine": "arthur",
            "match": r"^\[control: checkpoint",
            "tool_calls": [call("thinking_checkpoint", handoff="State: rings counted.")],
        }
    )
    rules.append({"engine": "arthur", "reply": "ok"})
    return rules


def child_with_talk(root_session):
    agent.start_space(root_session.chat_process_id)
    _, child = agent.split(root_session.chat_process_id, "Rings", "Count the rings.")
    plant(node(child.public_id), "count them")
    return node(child.public_id)


def control(node_pk: int, kind: str, since: int) -> str:
    """The control turn's outcome once it has one ("" when verified)."""
    outcomes: list[str] = []

    def ended() -> bool:
        outcome = human.control_outcome(node_pk, kind, since)
        if outcome is not None:
            outcomes.append(outcome)
        return outcome is not None

    wait_until(ended)
    return outcomes[-1]


@pytest.mark.django_db(transaction=True)
def test_a_checkpoint_control_turn_publishes_and_a_failed_one_keeps_the_old_value(
    root_session, script
):
    # given a branch, and an agent that refuses its first checkpoint turn
    script(checkpoint_script(first_fails=False))
    child = child_with_talk(root_session)
    # when the person asks for a checkpoint
    began = human.begin_checkpoint(child)
    # then it is published once the control turn verified it
    assert began.node(child.pk).checkpoint_refreshing_at is not None
    assert control(child.pk, "checkpoint", began.space.revision) == ""
    assert node(child.public_id).checkpoint_handoff == "State: rings counted."
    # when a later refresh's turn writes nothing
    script(checkpoint_script(first_fails=True))
    wait_until(lambda: idle(child.chat_process_id))
    again = human.begin_checkpoint(node(child.public_id))
    # then it fails, the old checkpoint is kept and the lock is let go
    assert "previous one is kept" in control(child.pk, "checkpoint", again.space.revision)
    kept = node(child.public_id)
    assert (kept.checkpoint_handoff, kept.checkpoint_refreshing_at) == (
        "State: rings counted.",
        None,
    )


@pytest.mark.django_db(transaction=True)
def test_return_is_refused_while_a_child_is_unreturned_and_on_an_empty_branch(root_session):
    from vancetope.errors import Conflict

    child = child_with_talk(root_session)
    after, grandchild = agent.split(child.chat_process_id, "Deep", "Go deep.")
    # when the person returns the branch whose child is open, and the empty grandchild
    with pytest.raises(Conflict, match="direct children unreturned"):
        human.begin_return(node(child.public_id))
    with pytest.raises(Conflict, match="empty"):
        human.begin_return(node(grandchild.public_id))
    with pytest.raises(Conflict, match="root does not return"):
        human.begin_return(node_of(root_session))
    # then nothing changed
    assert load(child.space_id).space.revision == after.space.revision
    assert node(child.public_id).state == NodeState.ACTIVE
    assert node(grandchild.public_id).state == NodeState.DORMANT


@pytest.mark.django_db(transaction=True)
def test_a_return_seals_the_branch_and_notifies_the_parent_once_without_waking_it(
    root_session, script
):
    # given a branch and an agent that fails its first return turn
    script(
        [
            {"engine": "arthur", "match": r"^\[control: return", "times": 1, "reply": "No."},
            {
                "engine": "arthur",
                "match": r"^\[control: return",
                "tool_calls": [call("thinking_return", handoff="Rings: 7 main rings.")],
            },
            {"engine": "arthur", "reply": "ok"},
        ]
    )
    child = child_with_talk(root_session)
    root_turns = ThinkProcess.objects.get(pk=root_session.chat_process_id).consumed_count
    # when the person returns it and the turn fails
    began = human.begin_return(child)
    assert began.node(child.pk).state == NodeState.RETURNING
    assert "active again" in control(child.pk, "return", began.space.revision)
    assert node(child.public_id).state == NodeState.ACTIVE
    # when the person returns it again
    wait_until(lambda: idle(child.chat_process_id))
    began = human.begin_return(node(child.public_id))
    # then it is returned, sealed, and the parent has one notice with the Handoff
    assert control(child.pk, "return", began.space.revision) == ""
    assert node(child.public_id).state == NodeState.RETURNED
    notices = ConversationMessage.objects.filter(
        process_id=root_session.chat_process_id, content__contains="Rings: 7 main rings."
    )
    # (appended by the tool call right after the return's commit)
    wait_until(lambda: not node(child.public_id).notice_pending)
    assert notices.count() == 1
    # and the parent was not woken: it took no turn
    root = ThinkProcess.objects.get(pk=root_session.chat_process_id)
    assert (root.consumed_count, root.status) == (root_turns, Status.IDLE)


@pytest.mark.django_db(transaction=True)
def test_a_return_given_up_before_its_turn_came_is_withdrawn_and_never_seals_later(
    root_session, script
):
    # given a branch whose agent is paused, so that the person's return order waits unread
    from processes.actions import lifecycle
    from processes.models import PendingMessage
    from spaces import requests

    script(
        [
            {
                "engine": "arthur",
                "match": r"^\[control: return",
                "tool_calls": [call("thinking_return", handoff="Rings: 7 main rings.")],
            },
            {"engine": "arthur", "reply": "ok"},
        ]
    )
    child = child_with_talk(root_session)
    wait_until(lambda: idle(child.chat_process_id))
    lifecycle.pause_process(child.chat_process_id)
    began = human.begin_return(child)
    assert began.node(child.pk).state == NodeState.RETURNING
    # when the person's wait times out (the reply says the return did not happen)
    requests.give_up(requests.Began(child.pk, "return", began.space.revision))
    assert "active again" in human.control_outcome(child.pk, "return", began.space.revision)
    # then the order is withdrawn: the agent, resumed, does not obey it afterwards
    order = PendingMessage.objects.get(process_id=child.chat_process_id, kind="CONTROL")
    assert (order.consumed, order.undone_at is not None) == (True, True)
    lifecycle.resume_process(child.chat_process_id)
    wait_until(lambda: idle(child.chat_process_id))
    assert node(child.public_id).state == NodeState.ACTIVE
    assert "Rings: 7 main rings." not in tool_answers(child.chat_process_id)
