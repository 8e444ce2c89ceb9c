"""The spaces in the admin: lists and pages open, and nothing is written there."""

from __future__ import annotations

import pytest
from django.urls import reverse

from spaces.actions import agent
from tests.support.arthur import arthur_session


@pytest.mark.django_db(transaction=True)
def test_space_and_node_pages_show_the_tree_its_changes_and_the_node_history(operator, alice):
    # given a space with a child
    session = arthur_session(alice)
    snapshot = agent.start_space(session.chat_process_id)
    _, child = agent.split(session.chat_process_id, "Moons", "The moons.")
    # when an operator opens the lists and pages
    pages = [
        reverse("admin:spaces_thinkingspace_changelist"),
        reverse("admin:spaces_thinkingspace_change", args=[snapshot.space.pk]),
        reverse("admin:spaces_thinkingnode_changelist"),
        reverse("admin:spaces_thinkingnode_change", args=[child.pk]),
    ]
    responses = [operator.get(url) for url in pages]
    # then they open, with the nodes, the mutations and the node's lifecycle history
    assert [r.status_code for r in responses] == [200, 200, 200, 200]
    space_page = responses[1].content.decode()
    assert "Moons" in space_page
    assert "split" in space_page
    assert "create" in responses[3].content.decode()
    # and nothing is added by hand
    assert operator.get(reverse("admin:spaces_thinkingspace_add")).status_code == 403
