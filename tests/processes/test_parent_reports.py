"""A child that ends or blocks reports to its parent through a PARENT_REPORT pending message."""

from __future__ import annotations

import pytest

from processes.actions.create import create_process
from processes.actions.lifecycle import pause_process, resume_process, stop_process
from processes.actions.sessions import create_session
from processes.models import ConversationMessage, PendingKind, PendingMessage, ThinkProcess
from processes.states import Status
from sessions_app.services import FingerprintData
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def session_of(tenancy):
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )


def reports_to(parent_id: int) -> list[PendingMessage]:
    return list(PendingMessage.objects.filter(process_id=parent_id, kind=PendingKind.PARENT_REPORT))


def test_a_stopped_child_reports_to_its_parent_which_wakes_and_reads_it(alice):
    session = session_of(alice)
    parent = ThinkProcess.objects.get(pk=session.chat_process_id)
    child = create_process(session, goal="count the stars", engine="ford", parent=parent)
    assert reports_to(parent.pk) == []  # IDLE is not reported
    # when
    stop_process(child.pk)
    # then
    [report] = reports_to(parent.pk)
    assert report.payload["childId"] == child.public_id
    assert report.payload["event"] == "STOPPED"
    assert "count the stars" in report.payload["text"]

    # the parent's LLM reads it behind the tag of docs/protocol.md
    seen = f"[report from {child.public_id} (ford): STOPPED]\n{report.payload['text']}"

    def answered() -> bool:
        return ConversationMessage.objects.filter(
            process_id=parent.pk, role="user", content=seen
        ).exists()

    wait_until(answered)
    wait_until(lambda: PendingMessage.objects.get(pk=report.pk).consumed)


def test_a_report_to_a_paused_parent_waits_for_its_resume(alice):
    session = session_of(alice)
    parent = ThinkProcess.objects.get(pk=session.chat_process_id)
    child = create_process(session, goal="wait", engine="ford", parent=parent)
    pause_process(parent.pk)
    stop_process(child.pk)
    [report] = reports_to(parent.pk)
    assert not report.consumed
    assert ThinkProcess.objects.get(pk=parent.pk).status == Status.PAUSED
    resume_process(parent.pk)
    wait_until(lambda: PendingMessage.objects.get(pk=report.pk).consumed)


def test_a_finished_frankie_reports_done_with_its_result(alice):
    session = session_of(alice)
    parent = ThinkProcess.objects.get(pk=session.chat_process_id)
    child = create_process(session, goal="say hi", engine="frankie", parent=parent)
    wait_until(lambda: ThinkProcess.objects.get(pk=child.pk).status == Status.CLOSED)
    [report] = wait_until(lambda: reports_to(parent.pk))
    assert report.payload["event"] == "DONE"
    assert "say hi" in report.payload["text"]


def test_a_top_level_process_reports_to_nobody(alice):
    session = session_of(alice)
    lonely = create_process(session, goal="alone", engine="ford")
    stop_process(lonely.pk)
    assert not PendingMessage.objects.filter(kind=PendingKind.PARENT_REPORT).exists()
