"""Children without blocked threads, and the budgets of a process tree.

A test engine, `spawner`, drives ctx.processes the way the orchestration engines will: a steer
"spawn N <goal>" spawns N frankie workers (each answers its goal and closes DONE), records them
in engine_state and ends its turn; each ParentReport is recorded against its child.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any, ClassVar

import pytest
from django.utils import timezone
from typing_extensions import override

from engines import registry
from engines.base import Contract, ThinkEngine
from engines.capabilities import ProcessView
from engines.context import ThinkEngineContext
from engines.messages import ParentReport, PendingMessage
from processes import recovery
from processes.actions import create, lifecycle, steer
from processes.capabilities.children import ChildProcesses
from processes.lane import dispatch
from processes.models import ConversationMessage, ProcessTransition, ThinkProcess
from processes.states import Call, CloseReason, Status
from recipes_app.models import Recipe, RecipeScope
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until
from vancetope.errors import Conflict, NotFound


class Spawner(ThinkEngine):
    name = "spawner"
    title = "Spawner"
    description = "Test engine: spawns frankie workers and collects their reports."
    version = "1.0.0"
    contract: ClassVar[Contract] = Contract(goal="wait for orders")

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        process.engine_state = {"children": [], "reports": {}}

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        state = dict(process.engine_state)
        if isinstance(message, ParentReport):
            reports = dict(state.get("reports", {}))
            reports[message.child_id] = {"event": message.event, "error": message.error}
            state["reports"] = reports
        else:
            _, count, goal = message.text.split(" ", 2)
            children = list(state.get("children", []))
            for _ in range(int(count)):
                # Recorded as each is spawned: a breach midway leaves the ones before it.
                children.append(ctx.processes.spawn(goal=goal, engine=self.child_engine))
                state["children"] = children
                process.engine_state = state
        process.engine_state = state

    child_engine = "frankie"


@pytest.fixture
def spawner(recipes: None) -> Iterator[str]:
    engine = Spawner()
    registry._registry[engine.name] = engine
    Recipe.objects.get_or_create(
        name="spawner", scope=RecipeScope.BUNDLED, defaults={"engine": "spawner"}
    )
    yield engine.name
    registry._registry.pop(engine.name, None)


def parent_of(tenancy: Tenancy, **params: Any) -> ThinkProcess:
    session = open_session(tenancy)
    return create.create_process(session, goal="orchestrate", engine="spawner", params=params)


def state(process_id: int) -> dict[str, Any]:
    return ThinkProcess.objects.get(pk=process_id).engine_state


def transition_at(process_id: int, call: Call) -> Any:
    row = ProcessTransition.objects.filter(process_id=process_id, call=call).order_by("at")
    return row.values_list("at", flat=True).first()


@pytest.mark.django_db(transaction=True)
def test_spawned_children_run_in_their_own_lanes_after_the_parents_turn_and_report_back(
    alice, spawner
):
    # given a spawner process
    parent = parent_of(alice)
    # when it is told to spawn two workers
    steer.steer_process(parent.pk, "spawn 2 count the moons")
    # then both report DONE to it, each recorded against its child
    reports = wait_until(lambda: len(state(parent.pk)["reports"]) == 2 and state(parent.pk))
    children = ThinkProcess.objects.filter(parent=parent).order_by("pk")
    assert [child.public_id for child in children] == state(parent.pk)["children"]
    assert {child_id: r["event"] for child_id, r in reports["reports"].items()} == {
        child.public_id: "DONE" for child in children
    }
    for child in children:
        # in the parent's tree, one level down, started by the parent's commit
        assert (child.root_id, child.depth, child.autostart) == (parent.pk, 1, True)
        assert (child.status, child.close_reason) == (Status.CLOSED, CloseReason.DONE)
        # no thread waited: each child started only after the parent's turn was committed
        assert transition_at(child.pk, Call.START) >= transition_at(parent.pk, Call.TURN_END)
    assert ThinkProcess.objects.get(pk=parent.pk).descendants == 2


@pytest.mark.django_db(transaction=True)
def test_a_plan_of_five_under_max_children_three_fails_the_parent_naming_the_budget(alice, spawner):
    # given a spawner whose params lower its tree's maxChildren to 3, under a grandparent that
    # listens (the tree is the grandparent's: the spawner itself is one of the three)
    grandparent = parent_of(alice)
    children = ChildProcesses(ThinkProcess.objects.get(pk=grandparent.pk))
    parent_id = children.spawn(goal="orchestrate", engine="spawner", params={"maxChildren": 3})
    parent_pk = int(parent_id.removeprefix("tp_"))
    lifecycle.start_process(parent_pk)
    # when it tries to spawn five workers
    steer.steer_process(parent_pk, "spawn 5 count the stars")
    # then it fails at once, with the budget named in its last error
    failed = wait_until(
        lambda: (p := ThinkProcess.objects.get(pk=parent_pk)).status == Status.CLOSED and p
    )
    assert failed.close_reason == CloseReason.FAILED
    assert "budget maxChildren exceeded" in failed.last_error
    # and the tree's three are itself and two workers, which never run: they stop with it
    spawned = ThinkProcess.objects.filter(parent_id=parent_pk)
    assert spawned.count() == 2
    wait_until(lambda: all(c.status == Status.CLOSED for c in spawned.all()))
    assert not ProcessTransition.objects.filter(process__in=spawned, call=Call.START).exists()
    # and its own parent hears why
    report = wait_until(lambda: state(grandparent.pk)["reports"].get(parent_id))
    assert report["event"] == "FAILED"
    assert "maxChildren" in report["error"]


@pytest.mark.django_db(transaction=True)
def test_a_child_below_max_depth_cannot_spawn_and_fails_naming_max_depth(alice, spawner):
    # given a tree limited to depth 1 (the root's params), whose child is a spawner too
    root = ThinkProcess.objects.get(pk=parent_of(alice, maxDepth=1).pk)
    child_id = ChildProcesses(root).spawn(goal="delegate", engine="spawner")
    child_pk = int(child_id.removeprefix("tp_"))
    lifecycle.start_process(child_pk)
    # when the child tries to spawn a grandchild (depth 2)
    steer.steer_process(child_pk, "spawn 1 go deeper")
    # then the child fails naming maxDepth, and nothing was spawned below it
    failed = wait_until(
        lambda: (p := ThinkProcess.objects.get(pk=child_pk)).status == Status.CLOSED and p
    )
    assert "budget maxDepth exceeded" in failed.last_error
    assert not ThinkProcess.objects.filter(parent_id=child_pk).exists()


@pytest.mark.django_db(transaction=True)
def test_once_the_tree_has_spent_max_tokens_it_spawns_no_more_and_fails_naming_the_budget(
    alice, spawner
):
    # given a tree of at most 30 tokens (the scripted provider counts words), whose first
    # worker spent more than that on a long goal
    parent = parent_of(alice, maxTokens=30)
    steer.steer_process(parent.pk, "spawn 1 " + " ".join(["word"] * 40))
    first = wait_until(lambda: state(parent.pk)["reports"])
    assert [report["event"] for report in first.values()] == ["DONE"]
    # when it spawns another worker
    steer.steer_process(parent.pk, "spawn 1 a short goal")
    # then the spawn is refused: the parent fails naming the budget, and no worker is made
    failed = wait_until(
        lambda: ThinkProcess.objects.filter(pk=parent.pk, status=Status.CLOSED).first()
    )
    assert failed.close_reason == CloseReason.FAILED
    assert "budget maxTokens exceeded" in failed.last_error
    assert ThinkProcess.objects.filter(parent=parent).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_tree_spent_max_tokens_after_its_spawn_fails_its_first_llm_call(
    alice, spawner
):
    # given a worker spawned (not yet started) in a tree of at most 30 tokens
    parent = ThinkProcess.objects.get(pk=parent_of(alice, maxTokens=30).pk)
    worker = create.create_process(
        parent.session, goal="a short goal", engine="frankie", parent=parent, start=False
    )
    # and a sibling's work spends the tree's tokens meanwhile
    ThinkProcess.objects.filter(pk=parent.pk).update(prompt_tokens=31)
    # when the worker starts
    lifecycle.start_process(worker.pk)
    # then its LLM call is refused: it fails naming the budget, having spent nothing
    failed = wait_until(
        lambda: ThinkProcess.objects.filter(pk=worker.pk, status=Status.CLOSED).first()
    )
    assert (failed.close_reason, failed.prompt_tokens) == (CloseReason.FAILED, 0)
    assert "budget maxTokens exceeded" in failed.last_error


@pytest.mark.django_db(transaction=True)
def test_a_process_spawning_over_the_budget_from_an_interface_gets_a_409(alice, spawner):
    parent = ThinkProcess.objects.get(pk=parent_of(alice, maxChildren=1).pk)
    create.create_process(parent.session, goal="one", engine="ford", parent=parent, start=False)
    with pytest.raises(Conflict) as refused:
        create.create_process(parent.session, goal="two", engine="ford", parent=parent)
    assert (refused.value.code, refused.value.error) == (409, "budget-exceeded")
    assert ThinkProcess.objects.filter(parent=parent).count() == 1


@pytest.mark.django_db(transaction=True)
def test_stopping_a_parent_stops_its_open_children(alice, spawner):
    # given a parent with an idle ford child
    parent = ThinkProcess.objects.get(pk=parent_of(alice).pk)
    child = create.create_process(parent.session, goal="stay", engine="ford", parent=parent)
    assert child.status == Status.IDLE
    # when the parent is stopped
    lifecycle.stop_process(parent.pk)
    # then so is the child
    stopped = ThinkProcess.objects.get(pk=child.pk)
    assert (stopped.status, stopped.close_reason) == (Status.CLOSED, CloseReason.STOPPED)


@pytest.mark.django_db(transaction=True)
def test_a_child_whose_start_was_lost_in_a_restart_is_started_by_recovery(
    alice, spawner, monkeypatch
):
    # given a parent whose commit asked for a child's start, which never ran (the Brain stopped)
    monkeypatch.setattr(dispatch, "dispatch_start", lambda process_id: None)
    parent = parent_of(alice)
    steer.steer_process(parent.pk, "spawn 1 count the rings")
    [child] = wait_until(lambda: list(ThinkProcess.objects.filter(parent=parent, autostart=True)))
    assert child.status == Status.INIT
    monkeypatch.undo()
    # when the Brain recovers
    recovery.recover_lanes(min_pending_age=timedelta(0))
    # then the child runs and reports
    wait_until(lambda: state(parent.pk)["reports"].get(child.public_id))


@pytest.mark.django_db(transaction=True)
def test_a_parent_acts_only_on_its_own_children(alice, bob, spawner):
    # given alice's spawner with a child, and a process of another session
    parent = ThinkProcess.objects.get(pk=parent_of(alice).pk)
    children = ChildProcesses(parent)
    own = children.spawn(goal="mine", engine="ford")
    stranger = create.create_process(open_session(bob), goal="not yours", engine="ford")
    # its goal runs in a turn of its own first
    wait_until(
        lambda: ThinkProcess.objects.filter(
            pk=stranger.pk, status=Status.IDLE, consumed_count__gte=1
        ).exists()
    )
    # then its own child is listed and steerable, the stranger is not found
    assert [child["id"] for child in children.list()] == [own]
    assert children.status(own)["id"] == own
    for call in (children.status, children.stop):
        with pytest.raises(NotFound):
            call(stranger.public_id)
    with pytest.raises(NotFound):
        children.steer(stranger.public_id, "do my bidding")
    assert ThinkProcess.objects.get(pk=stranger.pk).status == Status.IDLE


@pytest.mark.django_db(transaction=True)
def test_a_tree_older_than_max_wall_seconds_spawns_no_more_workers(alice, spawner):
    # given a tree allowed to run 60 s whose root was created two minutes ago
    parent = parent_of(alice, maxWallSeconds=60)
    ThinkProcess.objects.filter(pk=parent.pk).update(
        created_at=timezone.now() - timedelta(minutes=2)
    )
    # when it spawns a worker
    steer.steer_process(parent.pk, "spawn 1 too late")
    # then the spawn is refused and the parent fails naming the budget
    failed = wait_until(
        lambda: ThinkProcess.objects.filter(pk=parent.pk, status=Status.CLOSED).first()
    )
    assert "budget maxWallSeconds exceeded" in failed.last_error
    assert not ThinkProcess.objects.filter(parent=parent).exists()


@pytest.mark.django_db(transaction=True)
def test_a_worker_of_a_tree_that_ran_out_of_time_fails_its_next_llm_call(alice, spawner):
    # given a worker spawned in a tree allowed to run 60 s, and the tree then ages past that
    parent = ThinkProcess.objects.get(pk=parent_of(alice, maxWallSeconds=60).pk)
    worker = create.create_process(
        parent.session, goal="too late", engine="frankie", parent=parent, start=False
    )
    ThinkProcess.objects.filter(pk=parent.pk).update(
        created_at=timezone.now() - timedelta(minutes=2)
    )
    # when the worker starts
    lifecycle.start_process(worker.pk)
    # then its LLM call is refused, naming the budget
    failed = wait_until(
        lambda: ThinkProcess.objects.filter(pk=worker.pk, status=Status.CLOSED).first()
    )
    assert "budget maxWallSeconds exceeded" in failed.last_error


@pytest.mark.django_db(transaction=True)
def test_a_sessions_chat_process_spends_no_trees_budget(alice, settings):
    # given a Brain whose trees may spend one token only
    settings.VANCETOPE_TREE_MAX_TOKENS = 1
    session = open_session(alice)
    # when the person chats (twice: the second call sees the first's tokens)
    for text in ("hello there", "and again"):
        steer.send_chat(session.pk, text)
        wait_until(
            lambda text=text: ConversationMessage.objects.filter(
                process_id=session.chat_process_id, content=f"echo: {text}"
            ).exists()
        )
    # then the chat process answered both and is still open
    assert ThinkProcess.objects.get(pk=session.chat_process_id).status == Status.IDLE
