"""Undo for human clients (issue 17, docs/protocol.md `process-undo`), through the service layer:
an arthur turn that spawned a child and posted an inbox item is taken back whole; a system
session's process, a RUNNING one and a turn older than the kept snapshots are refused and
nothing changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from typing_extensions import override

from engines import registry
from engines.base import Contract, ThinkEngine
from engines.capabilities import ProcessView
from engines.context import ThinkEngineContext
from engines.messages import PendingMessage as Message
from inbox.models import InboxItem, InboxStatus
from inbox.services import do_answer
from processes.actions import lifecycle, steer
from processes.actions.sessions import create_session
from processes.actions.undo import undo_turn
from processes.admin import UNDONE_STYLE
from processes.models import (
    ConversationMessage,
    PendingKind,
    PendingMessage,
    ProcessTransition,
    ThinkProcess,
)
from processes.states import CloseReason, Status
from recipes_app.models import Recipe, RecipeScope
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until
from vancetope.errors import Conflict, NotFound

pytestmark = pytest.mark.django_db(transaction=True)


def chat_session(tenancy: Tenancy, recipe: str = "ford", *, system: bool = False) -> Session:
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe=recipe,
        system=system,
    )


def chat(session: Session, text: str) -> None:
    """Send a chat message and wait until its turn is committed and the lane is at rest."""
    sent = steer.send_chat(session.pk, text).message
    wait_until(lambda: PendingMessage.objects.filter(pk=sent.pk, consumed=True).exists())
    resting = ThinkProcess.objects.filter(pk=sent.process_id).exclude(status=Status.RUNNING)
    wait_until(resting.exists)


def visible(process_id: int) -> list[tuple[str, str]]:
    rows = ConversationMessage.objects.filter(process_id=process_id, undone_at__isnull=True)
    return [(row.role, row.content) for row in rows.order_by("index")]


def snapshot_of(process_id: int) -> dict[str, Any]:
    process = ThinkProcess.objects.get(pk=process_id)
    return {
        "status": process.status,
        "engine_state": process.engine_state,
        "engine_params": process.engine_params,
        "conversation": list(
            ConversationMessage.objects.filter(process_id=process_id).values_list(
                "index", "undone_at"
            )
        ),
        "pending": list(PendingMessage.objects.filter(process_id=process_id).values()),
        "transitions": ProcessTransition.objects.filter(process_id=process_id).count(),
    }


def test_undo_takes_back_the_last_turn_and_undo_again_the_one_before(alice, script):
    script([{"engine": "ford", "match": "^(.*)$", "reply": "ack"}])
    session = chat_session(alice)
    chat(session, "one")
    chat(session, "two")
    pk = session.chat_process_id
    # when the last turn is undone
    undone = undo_turn(pk, user=alice.user)
    # then its message comes back, its two messages are hidden (kept, marked who and when)
    assert (undone.seq, undone.text, undone.messages) == (2, "two", 2)
    assert visible(pk) == [("user", "one"), ("assistant", "ack")]
    hidden = ConversationMessage.objects.filter(process_id=pk, undone_at__isnull=False)
    assert [(row.content, row.undone_by_id) for row in hidden.order_by("index")] == [
        ("two", alice.user.pk),
        ("ack", alice.user.pk),
    ]
    # and the turn's events are left out of a replay, and the undo is on record
    replayed = [
        e.data.get("text")
        for e in SessionEvent.objects.filter(session_id=session.pk, undone=False)
        if e.event == "chat-message"
    ]
    assert replayed == ["one", "ack"]
    record = ProcessTransition.objects.filter(process_id=pk, call="undo").get()
    assert (record.from_status, record.to_status) == ("IDLE", "IDLE")
    assert "message #2 undone by user-alice" in record.detail
    # when undone again, the turn before goes too
    assert undo_turn(pk, user=alice.user).text == "one"
    assert visible(pk) == []
    # and a third undo has nothing left
    with pytest.raises(Conflict, match="no turn to undo"):
        undo_turn(pk, user=alice.user)


def test_an_arthur_turn_that_spawned_a_child_and_posted_an_item_is_taken_back(alice, script):
    # given arthur, whose answer to one message starts a ford worker and posts a question
    create_worker = {"name": "process_create", "arguments": {"recipe": "ford", "goal": "watch"}}
    post = {
        "name": "inbox_post",
        "arguments": {"kind": "QUESTION", "title": "Which?", "body": "A or B", "options": ["A"]},
    }
    script(
        [
            {"engine": "arthur", "match": "^hello$", "reply": "hi"},
            {
                "engine": "arthur",
                "match": "^start watching$",
                "times": 1,
                "tool_calls": [create_worker, post],
            },
            {"engine": "arthur", "match": "^start watching$", "reply": "A worker watches."},
            {"engine": "ford", "reply": "watching"},
        ]
    )
    session = chat_session(alice, "arthur")
    pk = session.chat_process_id
    chat(session, "hello")
    before = ThinkProcess.objects.get(pk=pk)
    chat(session, "start watching")
    [child] = ThinkProcess.objects.filter(parent_id=pk)
    wait_until(lambda: ThinkProcess.objects.get(pk=child.pk).status == Status.IDLE)
    [item] = InboxItem.objects.filter(origin_process_id=pk)
    assert item.status == InboxStatus.OPEN
    # when the person undoes that turn
    undone = undo_turn(pk, user=alice.user)
    # then the child is stopped, the open item dismissed, the state the one before the turn
    child.refresh_from_db()
    assert (child.status, child.close_reason) == (Status.CLOSED, CloseReason.STOPPED)
    item.refresh_from_db()
    assert item.status == InboxStatus.DISMISSED
    assert undone.stopped == [child.public_id]
    assert undone.dismissed == [item.public_id]
    after = ThinkProcess.objects.get(pk=pk)
    assert after.engine_state == before.engine_state
    assert after.engine_params == before.engine_params
    assert visible(pk) == [("user", "hello"), ("assistant", "hi")]
    # and the child's stop never reaches arthur as a report that wakes it
    assert not PendingMessage.objects.filter(process_id=pk, consumed=False).exists()
    assert after.status == Status.IDLE
    assert after.waiting == 0


def test_an_answered_item_stays_and_the_reply_says_so(alice, script):
    post = {"name": "inbox_post", "arguments": {"kind": "APPROVAL", "title": "Go?", "body": "."}}
    script(
        [
            {"engine": "arthur", "match": "^ask$", "times": 1, "tool_calls": [post]},
            {"engine": "arthur", "reply": "noted"},
        ]
    )
    session = chat_session(alice, "arthur")
    pk = session.chat_process_id
    chat(session, "ask")
    [item] = InboxItem.objects.filter(origin_process_id=pk)
    do_answer(alice.user, item.public_id, {"decision": "approve"})
    wait_until(lambda: not PendingMessage.objects.filter(process_id=pk, consumed=False).exists())
    wait_until(lambda: ThinkProcess.objects.get(pk=pk).status == Status.IDLE)
    # when the turn that posted it is undone
    undone = undo_turn(pk, user=alice.user)
    # then the answered item stays answered, and the reply says so
    assert undone.dismissed == []
    [note] = undone.not_undone
    assert (note["kind"], note["id"]) == ("inbox-item", item.public_id)
    assert "answered already" in note["text"]
    assert InboxItem.objects.get(pk=item.pk).status == InboxStatus.ANSWERED
    # and the turn that read the answer is taken back with it
    assert visible(pk) == []


def test_undo_of_a_system_sessions_process_is_refused_and_changes_nothing(alice, script):
    script([{"reply": "ack"}])
    session = chat_session(alice, system=True)
    chat(session, "one")
    pk = session.chat_process_id
    before = snapshot_of(pk)
    with pytest.raises(Conflict, match="undo is for human clients") as refused:
        undo_turn(pk, user=alice.user)
    assert refused.value.code == 409
    assert snapshot_of(pk) == before


def test_undo_of_a_running_process_is_refused_and_changes_nothing(alice, script):
    script([{"match": "^one$", "reply": "ack"}, {"match": "^slow$", "reply": "late", "delay": 3}])
    session = chat_session(alice)
    pk = session.chat_process_id
    chat(session, "one")
    steer.send_chat(session.pk, "slow")
    wait_until(lambda: ThinkProcess.objects.get(pk=pk).status == Status.RUNNING)
    before = snapshot_of(pk)
    with pytest.raises(Conflict, match="it is RUNNING"):
        undo_turn(pk, user=alice.user)
    assert snapshot_of(pk) == before
    lifecycle.pause_process(pk)


def test_a_turn_older_than_the_kept_snapshots_is_too_old_and_nothing_changes(
    alice, script, settings
):
    settings.VANCETOPE_UNDO_KEEP_TURNS = 2
    script([{"reply": "ack"}])
    session = chat_session(alice)
    pk = session.chat_process_id
    for text in ("one", "two", "three", "four"):
        chat(session, text)
    # only the newest two turns keep their snapshot (older ones were cleared by the commit)
    kept = PendingMessage.objects.filter(process_id=pk, undo_snapshot__isnull=False)
    assert sorted(kept.values_list("seq", flat=True))[-2:] == [3, 4]
    assert not kept.filter(seq=1).exists()
    assert [undo_turn(pk, user=alice.user).text for _ in range(2)] == ["four", "three"]
    before = snapshot_of(pk)
    with pytest.raises(Conflict, match="too old to undo") as refused:
        undo_turn(pk, user=alice.user)
    assert "message #2" in refused.value.message
    assert snapshot_of(pk) == before


def test_another_users_process_is_not_found(alice, bob, script):
    script([{"reply": "ack"}])
    session = chat_session(alice)
    chat(session, "one")
    with pytest.raises(NotFound):
        undo_turn(session.chat_process_id, user=bob.user)
    assert visible(session.chat_process_id) == [("user", "one"), ("assistant", "ack")]


def test_undo_of_a_paused_process_leaves_it_paused(alice, script):
    script([{"reply": "ack"}])
    session = open_session(alice)
    pk = session.chat_process_id
    chat(session, "one")
    lifecycle.pause_process(pk)
    undone = undo_turn(pk, user=alice.user)
    assert (undone.text, undone.process.status) == ("one", Status.PAUSED)
    assert PendingMessage.objects.filter(process_id=pk, kind=PendingKind.USER).count() == 1


def test_the_admin_shows_undone_messages_greyed_with_who_undid_them_and_when(
    alice, script, operator
):
    script([{"reply": "ack"}])
    session = open_session(alice)
    pk = session.chat_process_id
    chat(session, "kept")
    chat(session, "taken back")
    undo_turn(pk, user=alice.user)
    page = operator.get(f"/admin/processes/thinkprocess/{pk}/change/").content.decode()
    greyed = f'<span class="undone" style="{UNDONE_STYLE}">taken back</span>'
    assert greyed in page
    assert "by user-alice at " in page
    # the standing messages are shown as they are
    assert "<p>kept</p>" in page


class Planner(ThinkEngine):
    """Test engine: each message adds a node to its task tree (and says nothing)."""

    name = "undo-planner"
    title = "Planner"
    description = "Test engine: one task-tree node per message."
    version = "1.0.0"
    contract: ClassVar[Contract] = Contract(goal="wait for orders")

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        process.engine_state = {}

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: Message) -> None:
        nodes = list((process.engine_state.get("taskTree") or {}).get("nodes", []))
        nodes.append({"id": f"n{len(nodes) + 1}", "title": message.text, "status": "DONE"})
        tree = {"rootId": "n1", "nodes": nodes}
        process.engine_state = {"taskTree": tree}
        ctx.events.task_tree(tree)


@pytest.fixture
def planner(recipes: None) -> Iterator[str]:
    engine = Planner()
    registry._registry[engine.name] = engine
    Recipe.objects.get_or_create(
        name=engine.name, scope=RecipeScope.BUNDLED, defaults={"engine": engine.name}
    )
    yield engine.name
    registry._registry.pop(engine.name, None)


def test_an_undo_sends_the_task_tree_as_it_was_before_the_turn(alice, planner):
    session = chat_session(alice, planner)
    pk = session.chat_process_id
    chat(session, "plan")
    chat(session, "replan")
    undo_turn(pk, user=alice.user)
    trees = SessionEvent.objects.filter(session_id=session.pk, event="task-tree", undone=False)
    last = trees.order_by("seq").last()
    assert last is not None
    assert [node["title"] for node in last.data["tree"]["nodes"]] == ["plan"]
    assert ThinkProcess.objects.get(pk=pk).engine_state["taskTree"] == last.data["tree"]
