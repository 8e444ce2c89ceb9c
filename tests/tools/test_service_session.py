"""The system session of a service engine: one per (project, service), client type `service`,
shown as `_agrajag`, no chat process, a short idle that suspends it without touching its
running processes; and the user a service process acts for reaches its context, so that its
probe runs as that user (tool_probe_as_user)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from processes.actions.diagnosis import AGRAJAG, spawn_agrajag
from processes.actions.sessions import create_session, suspend_idle_sessions
from processes.actions.sessions import system_session as service_session
from processes.lane.worker import shutdown_worker
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from sessions_app.models import DisconnectPolicy, Session, SessionEvent, SessionStatus
from sessions_app.services import register_tools
from tests.support.tenancy import open_session
from tests.support.waiting import closed_process, wait_until
from vancetope.tools.client_bridge import accept_tool_result
from vancetope.tools.models import CallStatus, HealthStatus, ToolCall, ToolDiagnosis, ToolHealth

pytestmark = pytest.mark.django_db(transaction=True)

STATUS_TOOL = {
    "name": "read_status",
    "description": "Read the build status on this machine",
    "parameters": {"type": "object"},
    "safety": "SAFE_PROBE",
}


def test_a_service_session_is_its_own_client_type_without_chat_and_with_a_short_idle(alice):
    # when agrajag's first job in alice's project opens its session
    session = service_session(alice.project, AGRAJAG)
    # then it is the project's service session, shown as `_agrajag`, owned by `_system`
    assert (session.client_type, session.display_name) == ("service", "_agrajag")
    assert (session.system, session.is_human, session.owner.username) == (True, False, "_system")
    # with no chat process, suspended by the idle sweep after a few minutes, keeping its work
    assert session.chat_process_id is None
    assert not ThinkProcess.objects.filter(session=session).exists()
    assert session.idle_timeout == settings.VANCETOPE_SERVICE_SESSION_IDLE_SECONDS == 300
    assert (session.on_idle, session.on_suspend) == (DisconnectPolicy.SUSPEND, "KEEP")
    # and the next job of the same service finds the same session
    assert service_session(alice.project, AGRAJAG).pk == session.pk


def test_a_person_cannot_open_a_service_session(alice):
    from vancetope.errors import Forbidden

    with pytest.raises(Forbidden, match="clientType service"):
        create_session(alice.user, client_type="service", project_id=alice.project_id)


def test_the_idle_sweep_suspends_the_service_session_and_its_next_job_resumes_it(alice):
    session = service_session(alice.project, AGRAJAG)
    # when nothing happened for longer than its idle timeout
    later = timezone.now() + timedelta(seconds=session.idle_timeout + 1)
    assert suspend_idle_sessions(later) >= 1
    assert Session.objects.get(pk=session.pk).status == SessionStatus.SUSPENDED
    # then the next job resumes it instead of opening another
    again = service_session(alice.project, AGRAJAG)
    assert again.pk == session.pk
    assert again.status == SessionStatus.OPEN


def test_agrajag_probes_as_the_user_whose_call_failed_on_their_client(alice, llm):
    # given alice's terminal, bound, offering a SAFE_PROBE tool that failed for her
    llm([{"match": "system: Agrajag", "reply": "I cannot tell."}])
    # when agrajag is spawned for it
    terminal, call = probing_agrajag(alice)
    # then its probe is a call on alice's client: a tool-call event of her session
    assert call.session_id == terminal.pk
    agrajag = ThinkProcess.objects.get(think_engine="agrajag")
    assert call.process_id == agrajag.pk
    assert agrajag.session.client_type == "service"
    # (the row is written before the event is sent: wait for the event too)
    sent = wait_until(
        lambda: SessionEvent.objects.filter(session=terminal, event="tool-call").first()
    )
    assert sent.data["callId"] == call.public_id
    # and when her client answers that the tool works now
    accept_tool_result(terminal.pk, call.public_id, ok=True, result="green")
    # then the tool is UP (the failure was transient), written by that agrajag
    done = closed_process(agrajag.pk)
    assert done.close_reason == CloseReason.DONE
    health = ToolHealth.objects.get(tool="read_status")
    assert (health.status, health.classification) == (HealthStatus.UP, "transient")
    assert health.checked_by_id == agrajag.pk
    assert "probe:" in health.evidence


def test_a_service_process_without_an_originating_user_cannot_probe_as_a_user(alice, llm):
    from processes.actions.create import create_process
    from processes.capabilities.tools import toolbox_for

    session = service_session(alice.project, AGRAJAG)
    process = create_process(session, recipe=AGRAJAG, params={"tool": "x"}, start=False)
    result = toolbox_for(process, ["tool_probe_as_user"], lambda: None).invoke(
        "tool_probe_as_user", {"tool": "read_status"}
    )
    assert result.ok
    assert result.data == {
        "tool": "read_status",
        "ok": False,
        "error": "this process acts for no user",
        "classification": "not-allowed",
    }
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.INIT


def probing_agrajag(alice) -> tuple[Session, ToolCall]:
    """alice's terminal offers read_status, which failed for her; an agrajag spawned for it
    waits for its probe: a client call on her terminal that nobody answers."""
    terminal = open_session(alice)
    register_tools(terminal, [STATUS_TOOL])
    diagnosis = ToolDiagnosis.objects.create(
        project=alice.project,
        tool="read_status",
        last_error="the gizmo hiccuped",
        originating_user_id=alice.user.pk,
    )
    spawn_agrajag(diagnosis.pk)
    call = wait_until(
        lambda: ToolCall.objects.filter(tool="read_status", status=CallStatus.PENDING).first()
    )
    assert call is not None
    return terminal, call


def test_a_probe_whose_client_left_before_its_call_was_stored_fails_at_once(alice, llm):
    # given an agrajag waiting for alice's client (the call timeout far away)
    assert settings.VANCETOPE_CLIENT_TOOL_TIMEOUT >= 30
    llm([{"match": "system: Agrajag", "reply": "I cannot tell."}])
    terminal, call = probing_agrajag(alice)
    # when her client is gone, its disconnect having run before the call was stored (it
    # cleared the tools the client offered, and found no call to fail)
    Session.objects.filter(pk=terminal.pk).update(client_tools=[])
    # then the wait ends now, not at the timeout: the call failed, the client being gone
    failed = wait_until(
        lambda: ToolCall.objects.filter(pk=call.pk, status=CallStatus.FAILED).first(), timeout=5
    )
    assert failed.error == "the client disconnected before answering"


def test_a_worker_shutting_down_ends_a_turn_waiting_for_its_client_at_once(alice, llm):
    # given an agrajag waiting for alice's client, which stays connected and silent
    assert settings.VANCETOPE_CLIENT_TOOL_TIMEOUT >= 30
    llm([{"match": "system: Agrajag", "reply": "I cannot tell."}])
    _, call = probing_agrajag(alice)
    # when the in-process worker shuts down (as the Brain does on SIGTERM)
    stopper = threading.Thread(target=shutdown_worker, kwargs={"wait": True})
    stopper.start()
    stopper.join(10)
    # then the waiting turn left at its boundary, long before the call's timeout
    assert not stopper.is_alive()
    assert ToolCall.objects.get(pk=call.pk).status == CallStatus.CANCELLED
    # and the process is left for recovery, not closed: its work is not lost
    assert ThinkProcess.objects.get(think_engine="agrajag").status != Status.CLOSED
