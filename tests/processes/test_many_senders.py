"""Several OS processes steer one process on PostgreSQL: every message is consumed once, in
sequence order, and no two turns of the process ever overlap."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from processes.actions.sessions import create_session
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.states import Status
from sessions_app.services import FingerprintData

ROOT = Path(__file__).resolve().parents[2]
SENDERS = 8
STEERS_EACH = 125

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="needs PostgreSQL: set DATABASE_URL (.ci/run does)",
    ),
    pytest.mark.timeout(900),
]


def test_eight_os_processes_send_a_thousand_steers_consumed_once_in_order(alice):
    # given one chat process on the test database
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )
    target = session.chat_process_id
    database = connection.settings_dict
    url = (
        f"postgresql://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
    )
    env = {**os.environ, "DATABASE_URL": url, "VANCETOPE_INPROCESS_WORKER_THREADS": "2"}
    # when 8 OS processes send 125 steers each, at the same time
    started = time.monotonic()
    senders = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.steer_sender",
                "--process-id",
                str(target),
                "--prefix",
                f"w{n}",
                "--count",
                str(STEERS_EACH),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n in range(SENDERS)
    ]
    outputs = [sender.communicate(timeout=840)[0] for sender in senders]
    elapsed = time.monotonic() - started
    assert [sender.returncode for sender in senders] == [0] * SENDERS, "\n".join(outputs)

    # then every message is pending-no-more, consumed exactly once
    messages = list(PendingMessage.objects.filter(process_id=target).order_by("seq"))
    assert len(messages) == SENDERS * STEERS_EACH
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
    assert all(m.consumed for m in messages)
    # in sequence order: the conversation's user turns are the messages in seq order
    users = list(
        ConversationMessage.objects.filter(process_id=target, role="user")
        .order_by("index")
        .values_list("content", flat=True)
    )
    assert users == [m.text for m in messages]
    replies = ConversationMessage.objects.filter(process_id=target, role="assistant").count()
    assert replies == len(messages)
    # each sender's own messages kept the order it sent them in
    for n in range(SENDERS):
        own = [text for text in users if text.startswith(f"w{n}-")]
        assert own == [f"w{n}-{i}" for i in range(STEERS_EACH)]
    # a later message was never consumed under an earlier lease than an earlier one
    fences = [m.consumed_fence for m in messages]
    assert fences == sorted(fences)
    # turns never overlapped: the status history strictly alternates RUNNING and back
    history = list(
        ProcessTransition.objects.filter(process_id=target, call__in=["turn", "turn-end"])
        .order_by("at", "pk")
        .values_list("call", "from_status", "to_status")
    )
    assert history, "no turns were recorded"
    for index, (call, _, _) in enumerate(history):
        expected = "turn" if index % 2 == 0 else "turn-end"
        assert call == expected, history[max(0, index - 3) : index + 3]
    assert ThinkProcess.objects.get(pk=target).status == Status.IDLE
    print(f"\n{len(messages)} steers from {SENDERS} processes drained in {elapsed:.1f}s")
