"""Celery workers killed with SIGKILL mid-turn: nothing lost, nothing applied twice, and the
process continues once the dead worker's lease expires (the lane sweeper recovers it). A marvin
tree killed between two of its nodes completes without running a finished node again (the
PostgreSQL + Redis side of tests/e2e/test_marvin_restart.py)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from processes.actions.create import create_process
from processes.actions.sessions import create_session
from processes.actions.steer import send_chat
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.recovery import recover_lanes
from processes.states import Status
from sessions_app.models import Session
from sessions_app.services import FingerprintData
from tests.e2e.brain import CeleryWorker
from tests.support.marvin import plan, worker, worker_env
from tests.support.waiting import wait_until
from vancetope.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
KILLS = 20
LEASE_SECONDS = 2.0

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (
            os.environ.get("DATABASE_URL", "").startswith("postgres")
            and os.environ.get("REDIS_URL")
        ),
        reason="needs PostgreSQL and Redis: set DATABASE_URL and REDIS_URL (.ci/run does)",
    ),
    pytest.mark.timeout(900),
]


@dataclass(frozen=True)
class CeleryLanes:
    """A Celery queue of the test's own, its workers' environment, and a session whose lanes
    are driven there."""

    env: dict[str, str]
    queue: str
    session: Session


@pytest.fixture
def celery_lanes(alice, settings, tmp_path) -> Iterator[Callable[..., CeleryLanes]]:
    """`celery_lanes(name, rules, **worker_env)`: lanes driven by Celery workers on a queue of
    this test's own, with that scripted-provider script; the default queue is put back after."""
    previous_queue = celery_app.conf.task_default_queue

    def use(name: str, rules: list[dict[str, Any]], **extra: str) -> CeleryLanes:
        script = tmp_path / f"{name}.yaml"
        script.write_text(yaml.safe_dump(rules))
        queue = f"vt-{name}-{uuid.uuid4().hex[:8]}"
        env = worker_env(queue, script, tmp_path, **extra)
        settings.VANCETOPE_WORKER = "celery"
        settings.VANCETOPE_LLM_SCRIPT = str(script)
        celery_app.conf.task_default_queue = queue
        session = create_session(
            alice.user,
            client_type="cli",
            project_id=alice.project_id,
            fingerprint=FingerprintData(machine_id="m"),
        )
        return CeleryLanes(env, queue, session)

    yield use
    celery_app.conf.task_default_queue = previous_queue


def test_workers_killed_mid_turn_lose_nothing_and_apply_nothing_twice(celery_lanes):
    # given a slow LLM and a Celery queue of our own, served by worker OS processes
    lanes = celery_lanes(
        "kill",
        [{"reply": "a slow and careful answer", "delay": 0.8}],
        VANCETOPE_LEASE_SECONDS=str(LEASE_SECONDS),
    )
    env, queue, session = lanes.env, lanes.queue, lanes.session
    chat_id = session.chat_process_id
    workers = [CeleryWorker(env, queue, "worker-0")]
    recovery_seconds: list[float] = []
    sent: list[str] = []
    try:
        for kill in range(KILLS):
            # when a turn is running on the current worker…
            text = f"message {kill}"
            send_chat(session.pk, text)
            sent.append(text)
            wait_until(
                lambda: ThinkProcess.objects.get(pk=chat_id).status == Status.RUNNING,
                timeout=60,
            )
            time.sleep(0.2)
            # …it is killed, and a fresh worker starts
            workers[-1].kill()
            killed_at = time.monotonic()
            workers.append(CeleryWorker(env, queue, f"worker-{kill + 1}"))

            # then the sweeper brings the lane back and the message gets answered
            def answered(expected: str = text) -> bool:
                recover_lanes(min_pending_age=timedelta(0))
                return PendingMessage.objects.filter(
                    process_id=chat_id, payload__text=expected, consumed=True
                ).exists()

            wait_until(answered, timeout=LEASE_SECONDS + 30, interval=0.3)
            recovery_seconds.append(time.monotonic() - killed_at)
    finally:
        for worker in workers:
            worker.stop()

    messages = list(PendingMessage.objects.filter(process_id=chat_id).order_by("seq"))
    assert [m.text for m in messages] == sent
    assert all(m.consumed for m in messages)
    users = list(
        ConversationMessage.objects.filter(process_id=chat_id, role="user")
        .order_by("index")
        .values_list("content", flat=True)
    )
    assert users == sent, "a turn was lost or applied twice"
    replies = ConversationMessage.objects.filter(process_id=chat_id, role="assistant")
    assert replies.count() == KILLS
    recoveries = ProcessTransition.objects.filter(process_id=chat_id, call="recover").count()
    assert recoveries >= KILLS // 2, f"only {recoveries} kills landed mid-turn"
    assert max(recovery_seconds) < LEASE_SECONDS + 30
    print(
        f"\n{KILLS} kills, {recoveries} mid-turn recoveries; recovery after kill: "
        f"max {max(recovery_seconds):.1f}s, mean {sum(recovery_seconds) / KILLS:.1f}s"
    )


def test_sigterm_stops_a_running_turn_at_the_boundary_and_releases_the_lease(celery_lanes):
    # given a turn that streams slowly on a Celery worker
    lanes = celery_lanes("term", [{"reply": "one two three four five six", "delay": 1.5}])
    env, queue, session = lanes.env, lanes.queue, lanes.session
    chat_id = session.chat_process_id
    worker = CeleryWorker(env, queue)
    send_chat(session.pk, "take your time")
    wait_until(lambda: ThinkProcess.objects.get(pk=chat_id).status == Status.RUNNING, timeout=60)
    # when the worker gets SIGTERM (warm shutdown)
    stopped_at = time.monotonic()
    worker.stop()
    took = time.monotonic() - stopped_at
    # then it stopped at the next boundary, released the lane, and kept the message pending
    assert worker.process.returncode == 0, worker.log_path.read_text()
    assert took < 15
    process = ThinkProcess.objects.get(pk=chat_id)
    assert (process.status, process.lease_owner) == (Status.IDLE, "")
    message = PendingMessage.objects.get(process_id=chat_id)
    assert not message.consumed
    assert not ConversationMessage.objects.filter(process_id=chat_id).exists()


SLOW = ("the second task", "the third task", "the fourth task")
MARVIN_SCRIPT = [
    # Each rule fires once: a plan or a task run again would get the echo, and the tree would
    # fail or show it.
    {
        "engine": "marvin",
        "step": "plan",
        "times": 1,
        "tool_calls": plan(
            {"kind": "WORKER", "title": "First", "goal": "the first task"},
            *({"kind": "WORKER", "title": goal, "goal": goal} for goal in SLOW),
            {"kind": "AGGREGATE", "title": "Report"},
        ),
    },
    *worker("the first task", "first done", times=1),
    # Slow, so that the worker OS process is killed while these three run side by side.
    *(rule for goal in SLOW for rule in worker(goal, f"{goal} done", delay=2)),
    {"engine": "marvin", "step": "aggregate", "times": 1, "reply": "all done"},
]


def test_a_marvin_tree_whose_worker_is_killed_while_three_workers_run_finishes_each_once(
    celery_lanes,
):
    # given a marvin tree driven by Celery workers (five threads: marvin and four workers),
    # its first node done and its three other workers running at once
    lanes = celery_lanes("marvin", MARVIN_SCRIPT, VANCETOPE_LEASE_SECONDS=str(LEASE_SECONDS))
    env, queue, session = lanes.env, lanes.queue, lanes.session
    workers = [CeleryWorker(env, queue, "worker-0", threads=5)]

    def tree_nodes() -> list[dict[str, Any]]:
        tree = ThinkProcess.objects.get(pk=marvin.pk).engine_state.get("taskTree") or {}
        return list(tree.get("nodes", []))

    def nodes() -> list[str]:
        return [node["status"] for node in tree_nodes()]

    try:
        marvin = create_process(session, recipe="deep-think", goal="four tasks")
        running = ["DONE", "RUNNING", "RUNNING", "RUNNING"]
        wait_until(lambda: nodes()[1:5] == running, timeout=60, interval=0.05)
        slow_ids = [int(node["processId"].removeprefix("tp_")) for node in tree_nodes()[2:5]]
        holding = ThinkProcess.objects.filter(pk__in=slow_ids).exclude(lease_owner="")
        wait_until(lambda: holding.count() == 3, timeout=30, interval=0.02)
        killed_holding = {row.pk: row.lease_fence for row in holding}
        # when the worker OS process dies there and a fresh one takes over
        workers[-1].kill()
        workers.append(CeleryWorker(env, queue, "worker-1", threads=5))

        # then the sweeper brings the dead lanes back and the tree completes
        def closed() -> bool:
            recover_lanes(min_pending_age=timedelta(0))
            return ThinkProcess.objects.get(pk=marvin.pk).status == Status.CLOSED

        wait_until(closed, timeout=LEASE_SECONDS + 60, interval=0.3)
    finally:
        for worker_process in workers:
            worker_process.stop()

    done = ThinkProcess.objects.get(pk=marvin.pk)
    assert (done.close_reason, done.last_error) == ("DONE", ""), done.last_error
    tree = done.engine_state["taskTree"]["nodes"]
    assert [node["status"] for node in tree] == ["DONE"] * 6
    # a worker's result is its structured result
    assert [node["result"]["summary"] for node in tree[1:5]] == [
        "first done",
        *(f"{goal} done" for goal in SLOW),
    ]
    assert tree[5]["result"] == "all done"
    # one worker process per WORKER node, each of which answered once
    workers_of_tree = ThinkProcess.objects.filter(parent_id=marvin.pk).order_by("pk")
    assert [f"tp_{w.pk}" for w in workers_of_tree] == [node["processId"] for node in tree[1:5]]
    for child in workers_of_tree:
        answers = ConversationMessage.objects.filter(process_id=child.pk, role="assistant")
        assert answers.count() == 1, child.public_id
    # and the kill did land while the three slow workers held their lanes; later leases, in
    # the fresh worker, finished them
    for child in workers_of_tree[1:]:
        assert child.lease_fence > killed_holding[child.pk]


def spawn_then_answer(reply_delay: float) -> list[dict[str, Any]]:
    create = {"name": "process_create", "arguments": {"recipe": "ford", "goal": "count rings"}}
    return [
        {"engine": "arthur", "match": "^rings$", "times": 1, "tool_calls": [create]},
        {"engine": "arthur", "match": "^rings$", "reply": "Started.", "delay": reply_delay},
        {"engine": "ford", "reply": "seven"},
        {"engine": "arthur", "reply": "Noted."},
    ]


def test_a_child_spawned_by_a_turn_whose_worker_is_killed_before_the_commit_is_removed(
    celery_lanes, tmp_path
):
    # given a chat turn, driven by a Celery worker, that spawned a ford child and streams slowly
    lanes = celery_lanes(
        "spawn", spawn_then_answer(reply_delay=60), VANCETOPE_LEASE_SECONDS=str(LEASE_SECONDS)
    )
    env, queue, session = lanes.env, lanes.queue, lanes.session
    chat_id = session.chat_process_id
    workers = [CeleryWorker(env, queue, "worker-0")]

    def children() -> list[ThinkProcess]:
        return list(ThinkProcess.objects.filter(parent_id=chat_id).order_by("pk"))

    try:
        send_chat(session.pk, "rings")
        wait_until(lambda: [c.status for c in children()] == [Status.INIT], timeout=60)
        # when the worker dies before the turn commits, and a fresh one (with a quick
        # script) takes over
        workers[-1].kill()
        (tmp_path / "spawn.yaml").write_text(yaml.safe_dump(spawn_then_answer(reply_delay=0)))
        workers.append(CeleryWorker(env, queue, "worker-1"))

        # then the sweeper brings the lane back, and the retried turn answers
        def answered() -> bool:
            recover_lanes(min_pending_age=timedelta(0))
            return ConversationMessage.objects.filter(process_id=chat_id, role="assistant").exists()

        wait_until(answered, timeout=LEASE_SECONDS + 60, interval=0.3)
        # and exactly one child exists, the committed turn's, which starts
        wait_until(lambda: [c.status != Status.INIT for c in children()] == [True], timeout=30)
    finally:
        for worker in workers:
            worker.stop()
    assert len(children()) == 1
    assert not children()[0].uncommitted_spawn
