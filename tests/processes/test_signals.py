"""What processes/ tells other apps goes out as Django signals (processes/signals.py): a
failing receiver of process_settled is its own failure, and receivers run in the order their
apps connected them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from processes import signals
from processes.actions.create import create_process
from processes.actions.lifecycle import stop_process
from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status
from tests.support.tenancy import Tenancy, open_session

pytestmark = pytest.mark.django_db(transaction=True)

heard: list[tuple[str, str]] = []


def failing_receiver(sender: Any, **kwargs: Any) -> None:
    raise RuntimeError("this receiver is broken")


def recording_receiver(sender: Any, *, process: ThinkProcess, reason: str, **kwargs: Any) -> None:
    heard.append((process.public_id, reason))


@pytest.fixture
def broken_settled_receiver() -> Iterator[None]:
    # given a receiver that always fails, connected before one that records what it hears
    heard.clear()
    signals.process_settled.connect(failing_receiver, sender=ThinkProcess)
    signals.process_settled.connect(recording_receiver, sender=ThinkProcess)
    yield
    signals.process_settled.disconnect(failing_receiver, sender=ThinkProcess)
    signals.process_settled.disconnect(recording_receiver, sender=ThinkProcess)


@pytest.mark.usefixtures("broken_settled_receiver")
def test_a_failing_settled_receiver_is_logged_and_the_child_and_its_parent_go_on(
    alice: Tenancy, caplog: pytest.LogCaptureFixture
) -> None:
    session = open_session(alice)
    assert session.chat_process_id is not None
    parent = ThinkProcess.objects.get(pk=session.chat_process_id)
    child = create_process(session, goal="count the stars", engine="ford", parent=parent)
    # when the child is stopped
    with caplog.at_level(logging.ERROR, logger="vancetope.dispatch"):
        stop_process(child.pk)
    # then it is closed, its parent heard, and the receiver after the broken one was told
    assert ThinkProcess.objects.get(pk=child.pk).status == Status.CLOSED
    assert PendingMessage.objects.filter(
        process_id=parent.pk, kind=PendingKind.PARENT_REPORT
    ).exists()
    assert (child.public_id, CloseReason.STOPPED) in heard
    failures = [
        r.getMessage()
        for r in caplog.records
        if r.name == "vancetope.dispatch" and r.getMessage().startswith(f"{child.public_id}:")
    ]
    assert failures
    assert all("failing_receiver" in failure for failure in failures)
    assert all("this receiver is broken" in failure for failure in failures)


def test_the_settled_receivers_run_in_the_order_their_apps_connected_them() -> None:
    # given the apps as INSTALLED_APPS lists them (inbox/, then triggers/, then spaces/)
    # when the receivers of process_settled are listed
    names = [
        f"{found.__module__}.{found.__qualname__}"
        for found in signals.process_settled._live_receivers(ThinkProcess)[0]
    ]
    # then a root process's question reaches the inbox first (a run's notice names its
    # item), a run's end comes before a cron continuation's, and both before a space node's
    assert names[:4] == [
        "inbox.receivers.process_settled",
        "triggers.receivers.run_process_settled",
        "triggers.receivers.continuation_settled",
        "spaces.receivers.node_settled",
    ]
