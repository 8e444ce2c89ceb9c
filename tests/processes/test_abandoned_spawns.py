"""A child made by a turn that never committed does not outlive that turn.

arthur's turn calls `process_create` (the child is a row at once, INIT), then goes on; when
that turn fails (here) or its Brain is killed (tests/e2e/test_abandoned_spawns_crash.py) before
its commit, the retried turn spawns again. Before the fix the first child stayed INIT for ever
and one message made two trees; now the abandoned one is removed before the retry, and only
committed children count against the tree's budgets.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from processes.actions import create, steer
from processes.budgets import BudgetExceeded
from processes.models import ThinkProcess
from processes.recovery import remove_abandoned_spawns
from processes.states import Status
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

CREATE = {"name": "process_create", "arguments": {"recipe": "ford", "goal": "count the rings"}}


def test_a_failed_turn_leaves_no_child_behind_and_its_retry_makes_exactly_one(
    alice: Tenancy, script, settings
) -> None:
    # given a chat whose first attempt spawns a child and then loses its provider
    settings.VANCETOPE_TURN_RETRY_SECONDS = 0.01
    script(
        [
            {"engine": "arthur", "match": "^rings$", "times": 1, "tool_calls": [CREATE]},
            {"engine": "arthur", "match": "^rings$", "times": 1, "error": "provider down"},
            {"engine": "arthur", "match": "^rings$", "times": 1, "tool_calls": [CREATE]},
            {"engine": "arthur", "match": "^rings$", "reply": "I started it."},
            {"engine": "ford", "reply": "seven"},
            {"engine": "arthur", "reply": "Done."},
        ]
    )
    session = open_session(alice)
    chat_id = session.chat_process_id
    assert chat_id is not None
    # when the person asks, and the turn is retried after the failure
    steer.send_chat(session.pk, "rings")

    def answered() -> bool:
        # children first: a child seen, then the lane seen free, means that turn is over (the
        # other order could see the lane free before the turn took it, then its first child)
        spawned = ThinkProcess.objects.filter(parent_id=chat_id).exists()
        row = ThinkProcess.objects.get(pk=chat_id)
        return spawned and row.status == Status.IDLE and not row.lease_owner

    assert wait_until(answered, timeout=20)
    # then exactly one child exists, the committed turn's, and it was started
    children = list(ThinkProcess.objects.filter(parent_id=chat_id))
    assert len(children) == 1
    assert not children[0].uncommitted_spawn
    assert wait_until(
        lambda: ThinkProcess.objects.get(pk=children[0].pk).status != Status.INIT, timeout=20
    )


def test_recovery_removes_the_children_of_a_turn_whose_lane_nobody_holds(
    alice: Tenancy,
) -> None:
    # given a parent whose lane is free, with one child its turn never committed, one it did,
    # and one a person created INIT on purpose (start=false)
    session = open_session(alice)
    assert session.chat_process_id is not None
    parent = ThinkProcess.objects.get(pk=session.chat_process_id)
    common = {"session": session, "parent": parent, "think_engine": "ford", "engine_version": "1"}
    abandoned = ThinkProcess.objects.create(**common, uncommitted_spawn=True)
    committed = ThinkProcess.objects.create(**common, autostart=True)
    on_purpose = ThinkProcess.objects.create(**common)
    # and another parent mid-turn (its lease held), with a child of the turn in flight
    busy = ThinkProcess.objects.create(
        session=session,
        think_engine="arthur",
        engine_version="1",
        lease_owner="host:1:1:x",
        lease_expires_at=timezone.now() + timedelta(minutes=1),
    )
    in_flight = ThinkProcess.objects.create(
        session=session,
        parent=busy,
        think_engine="ford",
        engine_version="1",
        uncommitted_spawn=True,
    )
    # when recovery looks
    removed = remove_abandoned_spawns(timezone.now())
    # then only the abandoned child is gone
    assert removed == 1
    remaining = set(ThinkProcess.objects.values_list("pk", flat=True))
    assert abandoned.pk not in remaining
    assert {committed.pk, on_purpose.pk, in_flight.pk} <= remaining


def test_an_abandoned_child_no_longer_counts_against_its_trees_max_children(
    alice: Tenancy, recipes: None
) -> None:
    # given a process (not a chat) whose tree may spawn one child, and a turn of it that
    # spawned that child (as ctx.processes.spawn does) and never committed
    session = open_session(alice)
    root = create.create_process(
        session, goal="orchestrate", engine="ford", params={"maxChildren": 1}, start=False
    )
    child = create.create_process(
        session, goal="count", engine="ford", parent=root, start=False, spawned_by_turn=True
    )
    with pytest.raises(BudgetExceeded):
        create.create_process(
            session, goal="again", engine="ford", parent=root, start=False, spawned_by_turn=True
        )
    # when the abandoned child is removed (a failed attempt's own, or recovery's sweep)
    assert remove_abandoned_spawns(timezone.now(), [child.pk]) == 1
    # then the tree counts no child, and the retried turn may spawn its one child
    assert ThinkProcess.objects.get(pk=root.pk).descendants == 0
    retried = create.create_process(
        session, goal="count", engine="ford", parent=root, start=False, spawned_by_turn=True
    )
    assert ThinkProcess.objects.get(pk=root.pk).descendants == 1
    assert retried.root_id == root.pk
