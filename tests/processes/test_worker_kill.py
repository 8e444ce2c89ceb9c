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
from django.db import connection

from processes.actions.create import create_process
from processes.actions.steer import send_chat
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.recovery import recover_lanes
from processes.states import Status
from sessions_app.models import Session
from sessions_app.services import FingerprintData, create_session
from tests.conftest import wait_until
from tests.e2e.brain import CeleryWorker
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


def worker_env(queue: str, script: Path, var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a Celery worker on the test database, our queue and script."""
    database = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": (
            f"postgresql://{database['USER']}@{database['HOST']}:{database['PORT']}/"
            f"{database['NAME']}"
        ),
        "VANCETOPE_TASK_QUEUE": queue,
        "VANCETOPE_LLM_SCRIPT": str(script),
        "VANCETOPE_WORKER": "celery",
        "VANCETOPE_VAR_DIR": str(var_dir),
        **extra,
    }


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


MARVIN_SCRIPT = [
    # Each rule fires once: a plan or a first task run again would get the echo, and the
    # tree would fail or show it.
    {
        "engine": "marvin",
        "step": "plan",
        "times": 1,
        "tool_calls": [
            {
                "name": "plan_tasks",
                "arguments": {
                    "tasks": [
                        {"kind": "WORKER", "title": "First", "goal": "the first task"},
                        {"kind": "WORKER", "title": "Second", "goal": "the second task"},
                        {"kind": "AGGREGATE", "title": "Report"},
                    ]
                },
            }
        ],
    },
    {"engine": "frankie", "match": "the first task", "times": 1, "reply": "first done"},
    # Slow, so that the worker OS process is killed while the second worker runs.
    {"engine": "frankie", "match": "the second task", "reply": "second done", "delay": 2},
    {"engine": "marvin", "step": "aggregate", "times": 1, "reply": "both done"},
]


def test_a_marvin_tree_whose_worker_is_killed_between_nodes_finishes_without_rerunning_one(
    celery_lanes,
):
    # given a marvin tree driven by Celery workers, its first node done, its second running
    lanes = celery_lanes("marvin", MARVIN_SCRIPT, VANCETOPE_LEASE_SECONDS=str(LEASE_SECONDS))
    env, queue, session = lanes.env, lanes.queue, lanes.session
    workers = [CeleryWorker(env, queue, "worker-0")]

    def tree_nodes() -> list[dict[str, Any]]:
        tree = ThinkProcess.objects.get(pk=marvin.pk).engine_state.get("taskTree") or {}
        return list(tree.get("nodes", []))

    def nodes() -> list[str]:
        return [node["status"] for node in tree_nodes()]

    try:
        marvin = create_process(session, recipe="deep-think", goal="two tasks")
        wait_until(lambda: nodes()[1:3] == ["DONE", "RUNNING"], timeout=60, interval=0.05)
        second_id = int(tree_nodes()[2]["processId"].removeprefix("tp_"))
        killed_holding = wait_until(
            lambda: ThinkProcess.objects.filter(pk=second_id).exclude(lease_owner="").first(),
            timeout=30,
            interval=0.02,
        )
        # when the worker OS process dies there and a fresh one takes over
        workers[-1].kill()
        workers.append(CeleryWorker(env, queue, "worker-1"))

        # then the sweeper brings the dead lanes back and the tree completes
        def closed() -> bool:
            recover_lanes(min_pending_age=timedelta(0))
            return ThinkProcess.objects.get(pk=marvin.pk).status == Status.CLOSED

        wait_until(closed, timeout=LEASE_SECONDS + 60, interval=0.3)
    finally:
        for worker in workers:
            worker.stop()

    done = ThinkProcess.objects.get(pk=marvin.pk)
    assert (done.close_reason, done.last_error) == ("DONE", ""), done.last_error
    tree = done.engine_state["taskTree"]["nodes"]
    assert [node["status"] for node in tree] == ["DONE"] * 4
    # a worker's result is its report: its goal, its outcome and its answer
    assert [node["result"].split("\n")[-1] for node in tree[1:]] == [
        "first done",
        "second done",
        "both done",
    ]
    # one worker process per WORKER node, and the first one answered once
    workers_of_tree = ThinkProcess.objects.filter(parent_id=marvin.pk).order_by("pk")
    assert [f"tp_{w.pk}" for w in workers_of_tree] == [node["processId"] for node in tree[1:3]]
    first = workers_of_tree[0]
    answers = ConversationMessage.objects.filter(process_id=first.pk, role="assistant")
    assert [a.content for a in answers] == ["first done"]
    second = workers_of_tree[1]
    # and the kill did land while the second worker held its lane (its start, which runs the
    # task, is the whole of its work); a later lease, in the fresh worker, finished it
    assert killed_holding.lease_owner, "the kill did not land mid-task"
    assert second.lease_fence > killed_holding.lease_fence
