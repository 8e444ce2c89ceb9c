"""The pure checks of a mutation and the compare-and-swap on the space's revision."""

from __future__ import annotations

import pytest

from spaces import rules
from spaces.actions import agent, human
from spaces.models import NodeState, NodeTransition, SpaceChange, ThinkingNode, ThinkingSpace
from spaces.rules import Limits, StaleRevision
from spaces.store import load
from tests.support.spaces import node, plant, space_events
from vancetope.errors import BadRequest, Conflict

LIMITS = Limits(title_chars=10, depth=2, children=3, handoff_chars=20)


def test_titles_and_handoffs_are_checked_against_their_limits():
    # given the limits of a small space
    # when titles and Handoffs are checked
    # then an empty or too long one is refused naming its field, a fitting one is trimmed
    assert rules.check_title("  Moons ", LIMITS) == "Moons"
    with pytest.raises(BadRequest, match="title: a title has at most 10"):
        rules.check_title("x" * 11, LIMITS)
    with pytest.raises(BadRequest, match="handoff: a Handoff must not be empty"):
        rules.check_handoff("  ", LIMITS)
    with pytest.raises(BadRequest, match="at most 20 characters"):
        rules.check_handoff("y" * 21, LIMITS)


def test_an_unknown_version_is_refused_not_guessed():
    with pytest.raises(Conflict, match="version 2"):
        rules.check_version(2, "spc_1")


@pytest.mark.django_db(transaction=True)
def test_thinking_start_is_idempotent_per_session(root_session):
    # given a session's chat process
    process = root_session.chat_process_id
    # when it starts a space twice
    first = agent.start_space(process)
    second = agent.start_space(process)
    # then it is one space, at revision 1, whose root is the session
    assert first.space.pk == second.space.pk
    assert ThinkingSpace.objects.count() == 1
    assert second.space.revision == 1
    assert second.root.session_id == root_session.pk
    assert second.root.state == NodeState.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_a_split_gives_the_child_its_own_session_and_chat_process(root_session):
    # given a space
    agent.start_space(root_session.chat_process_id)
    # when the root's agent splits
    after, child = agent.split(root_session.chat_process_id, "Moons", "Count the moons.")
    # then the child has its own session and chat process, dormant, with its Handoff
    child = node(child.public_id)
    assert child.session_id != root_session.pk
    assert child.chat_process_id not in {None, root_session.chat_process_id}
    assert (child.state, child.inherited_handoff, child.depth) == ("dormant", "Count the moons.", 1)
    assert after.space.revision == 2
    # and every open session of the space got the whole space at revision 2
    assert space_events(root_session.pk)[-1]["revision"] == 2
    assert space_events(child.session_id)[-1]["nodes"][1]["id"] == child.public_id
    # and the mutation left its record rows
    assert list(SpaceChange.objects.values_list("revision", "kind")) == [(1, "start"), (2, "split")]
    assert NodeTransition.objects.filter(node=child, call="create").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_stale_revision_is_refused_and_writes_nothing(root_session):
    # given a space a person saw at revision 2
    agent.start_space(root_session.chat_process_id)
    _, child = agent.split(root_session.chat_process_id, "Moons", "Count the moons.")
    seen = load(child.space_id).space.revision
    # when the space moves on, and the person renames at the revision they saw
    human.rename(child, "Rings", revision=seen)
    with pytest.raises(StaleRevision):
        human.rename(child, "Comets", revision=seen)
    # then the second rename changed nothing
    assert node(child.public_id).title == "Rings"
    assert load(child.space_id).space.revision == seen + 1
    assert SpaceChange.objects.filter(kind="rename").count() == 1


@pytest.mark.django_db(transaction=True)
def test_depth_and_fan_out_limits_refuse_a_split_and_dispose_nothing_is_left(
    root_session, settings
):
    # given a space whose nodes have at most one child and are at most one level deep
    settings.VANCETOPE_SPACE_MAX_CHILDREN = 1
    settings.VANCETOPE_SPACE_MAX_DEPTH = 1
    agent.start_space(root_session.chat_process_id)
    _, child = agent.split(root_session.chat_process_id, "Moons", "Count the moons.")
    sessions_before = ThinkingNode.objects.count()
    # when the root splits a second time, and the child splits
    with pytest.raises(Conflict, match="at most 1 children"):
        agent.split(root_session.chat_process_id, "Rings", "Count the rings.")
    with pytest.raises(Conflict, match="at most 1 deep"):
        agent.split(child.chat_process_id, "Deeper", "More.")
    # then nothing was written
    assert ThinkingNode.objects.count() == sessions_before
    assert load(child.space_id).space.revision == 2


@pytest.mark.django_db(transaction=True)
def test_returned_nodes_are_sealed(root_session):
    # given a child that returned
    agent.start_space(root_session.chat_process_id)
    _, child = agent.split(root_session.chat_process_id, "Moons", "Count the moons.")
    plant(child, "how many moons?")
    agent.return_node(child.chat_process_id, "95 moons.")
    # when anything else is asked of it
    # then it is refused
    with pytest.raises(Conflict, match="sealed"):
        human.rename(node(child.public_id), "Other")
    with pytest.raises(Conflict, match="sealed"):
        agent.split(child.chat_process_id, "x", "y")
    with pytest.raises(Conflict, match="sealed"):
        agent.checkpoint(child.chat_process_id, "z")


@pytest.mark.django_db(transaction=True)
def test_a_stored_space_of_an_unknown_version_is_refused_and_left_as_it_is(root_session, alice):
    from rest_framework.test import APIClient

    # given a space stored with a version this Brain does not know
    snapshot = agent.start_space(root_session.chat_process_id)
    ThinkingSpace.objects.filter(pk=snapshot.space.pk).update(version=2)
    # when it is read, mutated or fetched over REST
    with pytest.raises(Conflict, match="does not guess"):
        load(snapshot.space.pk)
    with pytest.raises(Conflict, match="does not guess"):
        agent.split(root_session.chat_process_id, "Moons", "The moons.")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {alice.token}")
    response = client.get(f"/api/spaces/{snapshot.space.public_id}")
    # then it is refused and nothing was written
    assert (response.status_code, response.json()["error"]) == (409, "unknown-version")
    assert ThinkingNode.objects.count() == 1
    assert ThinkingSpace.objects.get().revision == 1
