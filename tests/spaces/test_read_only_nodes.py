"""A node a person cannot write in: a human split's child until its parent's agent wrote the
fork Handoff (as designed: "a read-only forkHandoffPending child"), and a returned, sealed branch.
A chat or steer there is a 409 saying why, and nothing is queued."""

from __future__ import annotations

import pytest

from processes.actions import steer
from processes.models import PendingMessage, ThinkProcess
from processes.states import Status
from spaces.actions import agent, human
from spaces.models import NodeState, ThinkingNode
from tests.support.arthur import said
from tests.support.spaces import node, plant
from tests.support.waiting import wait_until
from vancetope.errors import Conflict


def queued(process_id: int | None) -> int:
    return PendingMessage.objects.filter(process_id=process_id).count()


@pytest.mark.django_db(transaction=True)
def test_a_child_waiting_for_its_fork_handoff_refuses_chat_until_it_has_it(root_session, script):
    # given a human split whose first fork turn writes nothing: the child waits
    script(
        [
            {"engine": "arthur", "match": r"^\[control: fork handoff", "times": 1, "reply": "Hm."},
            {
                "engine": "arthur",
                "match": r"^\[control: fork handoff",
                "tool_calls": [
                    {"name": "thinking_fork_handoff", "arguments": {"handoff": "Moons: 95."}}
                ],
            },
            {"engine": "arthur", "reply": "ok"},
        ]
    )
    agent.start_space(root_session.chat_process_id)
    root = ThinkingNode.objects.get(session_id=root_session.pk)
    plant(root, "we talked about Saturn")
    after = human.split(root, "Moons")
    child = next(n for n in after.nodes if n.parent_id == root.pk)
    assert child.state == NodeState.FORK_PENDING
    before = queued(child.chat_process_id)
    # when the person chats in it, and steers its chat process
    with pytest.raises(Conflict, match="read-only") as chatted:
        steer.send_chat(child.session_id, "hello?")
    with pytest.raises(Conflict, match="fork Handoff"):
        steer.steer_process(child.chat_process_id, "hello?")
    # then both are refused, saying how to go on, and nothing is queued
    assert "space-fork-retry" in chatted.value.message
    assert queued(child.chat_process_id) == before
    # and once the retried fork wrote its Handoff, the person chats there
    # (the order's forced call is asked twice; neither answer calls the tool)
    failed = "I could not do that: step control: no thinking_fork_handoff call in the answer"
    wait_until(lambda: failed in said(root_session, "assistant"))
    wait_until(lambda: ThinkProcess.objects.get(pk=root.chat_process_id).status == Status.IDLE)
    human.retry_fork(node(child.public_id))
    wait_until(lambda: node(child.public_id).state == NodeState.DORMANT)
    accepted = steer.send_chat(child.session_id, "now?")
    assert accepted.message.payload["text"] == "now?"


@pytest.mark.django_db(transaction=True)
def test_a_returned_branch_refuses_chat(root_session):
    # given a child branch whose agent returned it
    agent.start_space(root_session.chat_process_id)
    _, child = agent.split(root_session.chat_process_id, "Rings", "Count the rings.")
    plant(child, "seven main rings")
    agent.return_node(child.chat_process_id, "Seven main rings.")
    assert node(child.public_id).state == NodeState.RETURNED
    before = queued(child.chat_process_id)
    # when the person chats in it
    with pytest.raises(Conflict, match="returned and sealed"):
        steer.send_chat(child.session_id, "one more thing")
    # then nothing is queued; the root still takes chat
    assert queued(child.chat_process_id) == before
    assert steer.send_chat(root_session.pk, "thanks").message.payload["text"] == "thanks"
