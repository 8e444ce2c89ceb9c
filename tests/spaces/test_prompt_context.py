"""A node's prompt holds its Handoffs and nothing of any other node's conversation."""

from __future__ import annotations

import pytest

from processes.actions import steer
from spaces.actions import agent
from spaces.capability import SpaceAccess
from tests.support.arthur import arthur_session, said
from tests.support.spaces import node, plant
from tests.support.waiting import wait_until

HANDOFFS = {
    "inherited": "H-INHERITED: study the inner moons only.",
    "sibling": "H-SIBLING-CHECKPOINT: outer moons are irregular.",
    "child": "H-CHILD-RETURNED: Io is volcanic.",
}


def grow(root_session):
    """root → (Moons, Rings); Moons → (Inner, Outer); Inner → (Io). Every node but Inner has a
    unique marker in its own conversation; Inner's sibling checkpointed, its child returned."""
    root = root_session.chat_process_id
    agent.start_space(root)
    space = agent.suggest(
        root, [("Moons", "H-MOONS: the moons."), ("Rings", "H-RINGS: the rings.")]
    )
    moons, rings = (n for n in space.nodes if n.depth == 1)
    _, inner = agent.split(moons.chat_process_id, "Inner", HANDOFFS["inherited"])
    _, outer = agent.split(moons.chat_process_id, "Outer", "H-OUTER: the outer moons.")
    _, io = agent.split(inner.chat_process_id, "Io", "H-IO: Io.")
    agent.checkpoint(outer.chat_process_id, HANDOFFS["sibling"])
    plant(node(io.public_id), "MARKER-IO-7c1 what about Io?")
    agent.return_node(io.chat_process_id, HANDOFFS["child"])
    markers = {
        root_session.chat_process_id: "MARKER-ROOT-a91",
        moons.chat_process_id: "MARKER-PARENT-b22",
        rings.chat_process_id: "MARKER-UNCLE-c33",
        outer.chat_process_id: "MARKER-SIBLING-d44",
    }
    for process_id, marker in markers.items():
        plant(next(n for n in node_list(space.space.pk) if n.chat_process_id == process_id), marker)
    return node(inner.public_id), [*markers.values(), "MARKER-IO-7c1"]


def node_list(space_pk):
    from spaces.models import ThinkingNode

    return list(ThinkingNode.objects.filter(space_id=space_pk))


@pytest.mark.django_db(transaction=True)
def test_a_child_two_levels_deep_renders_its_handoffs_and_no_other_nodes_messages(root_session):
    # given a space three levels deep with markers planted in every other node's conversation
    inner, markers = grow(root_session)
    assert inner.depth == 2
    # when the prompt context of the child two levels deep is rendered
    text = SpaceAccess(inner.chat_process_id).render()
    # then it holds its inherited Handoff, its sibling's checkpoint and its child's return
    for handoff in HANDOFFS.values():
        assert handoff in text
    # and nothing of any other node's conversation
    for marker in markers:
        assert marker not in text
    # and its parent's and uncle's own Handoffs are not its context either
    assert "H-MOONS" not in text
    assert "H-RINGS" not in text


@pytest.mark.django_db(transaction=True)
def test_every_llm_call_of_the_node_sees_its_handoffs_and_none_of_the_markers(root_session, script):
    # given the same space, and a script that tells what the node's system prompt holds
    inner, markers = grow(root_session)
    leaked = "|".join(markers)
    script(
        [
            {"engine": "arthur", "match": f"system: ({leaked})", "reply": "LEAKED"},
            {
                "engine": "arthur",
                "match": "system: (?s)(?=.*H-INHERITED)(?=.*H-SIBLING-CHECKPOINT)"
                "(?=.*H-CHILD-RETURNED)",
                "reply": "ALL-HANDOFFS",
            },
            {"engine": "arthur", "reply": "MISSING"},
        ]
    )
    session = inner.session
    # when the person chats in the node's own session
    steer.send_chat(session.pk, "what do I know?")
    # then the LLM saw every Handoff and no marker
    wait_until(lambda: said(session, "assistant"))
    assert said(session, "assistant") == ["ALL-HANDOFFS"]


@pytest.mark.django_db(transaction=True)
def test_an_ordinary_session_outside_a_space_has_no_space_context(alice, script):
    # given a session that is in no space
    script(
        [
            {"engine": "arthur", "match": "system: Thinking space", "reply": "SPACE"},
            {"engine": "arthur", "reply": "PLAIN"},
        ]
    )
    session = arthur_session(alice)
    # when the person chats
    steer.send_chat(session.pk, "hello")
    # then its prompt is unchanged
    wait_until(lambda: said(session, "assistant"))
    assert said(session, "assistant") == ["PLAIN"]
