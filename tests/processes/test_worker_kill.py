"""Celery workers killed with SIGKILL mid-turn: nothing lost, nothing applied twice, and the
process continues once the dead worker's lease expires (the lane sweeper recovers it)."""

from __future__ import annotations

import os
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.db import connection

from processes.actions.steer import send_chat
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.recovery import recover_lanes
from processes.states import Status
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


def test_workers_killed_mid_turn_lose_nothing_and_apply_nothing_twice(alice, settings, tmp_path):
    # given a slow LLM and a Celery queue of our own, served by worker OS processes
    script = tmp_path / "slow.yaml"
    script.write_text(yaml.safe_dump([{"reply": "a slow and careful answer", "delay": 0.8}]))
    queue = f"vt-kill-{uuid.uuid4().hex[:8]}"
    env = worker_env(queue, script, tmp_path, VANCETOPE_LEASE_SECONDS=str(LEASE_SECONDS))
    settings.VANCETOPE_WORKER = "celery"
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )
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
        celery_app.conf.task_default_queue = previous_queue

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


def test_sigterm_stops_a_running_turn_at_the_boundary_and_releases_the_lease(
    alice, settings, tmp_path
):
    # given a turn that streams slowly on a Celery worker
    script = tmp_path / "slow.yaml"
    script.write_text(yaml.safe_dump([{"reply": "one two three four five six", "delay": 1.5}]))
    queue = f"vt-term-{uuid.uuid4().hex[:8]}"
    env = worker_env(queue, script, tmp_path)
    settings.VANCETOPE_WORKER = "celery"
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )
    chat_id = session.chat_process_id
    worker = CeleryWorker(env, queue)
    try:
        send_chat(session.pk, "take your time")
        wait_until(
            lambda: ThinkProcess.objects.get(pk=chat_id).status == Status.RUNNING, timeout=60
        )
        # when the worker gets SIGTERM (warm shutdown)
        stopped_at = time.monotonic()
        worker.stop()
        took = time.monotonic() - stopped_at
    finally:
        celery_app.conf.task_default_queue = previous_queue
    # then it stopped at the next boundary, released the lane, and kept the message pending
    assert worker.process.returncode == 0, worker.log_path.read_text()
    assert took < 15
    process = ThinkProcess.objects.get(pk=chat_id)
    assert (process.status, process.lease_owner) == (Status.IDLE, "")
    message = PendingMessage.objects.get(process_id=chat_id)
    assert not message.consumed
    assert not ConversationMessage.objects.filter(process_id=chat_id).exists()
