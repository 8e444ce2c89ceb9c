"""What a session's suspension does to its processes (`onSuspend`): for the web (KEEP) the chat
process suspends and the work the person started from the session keeps running, so closing
a tab does not freeze a deep think; SUSPEND_ALL, the default of the clients that carry client
tools (the vance CLI), suspends every process of the session."""

from __future__ import annotations

import pytest

from processes.actions import lifecycle
from processes.actions.create import create_process
from processes.actions.sessions import create_session, disconnect_session, resume_session
from processes.actions.steer import steer_process
from processes.models import ConversationMessage, ThinkProcess
from processes.states import Status
from sessions_app.models import Session, SessionStatus, SuspendCause
from sessions_app.services import FingerprintData, register_tools
from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

FINGERPRINT = FingerprintData(machine_id="m-1", working_dir="/work")
TOOL = {"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}}


def session_with_work(
    alice: Tenancy, on_suspend: str | None = None, client_type: str = "cli"
) -> tuple[Session, int]:
    """A session (suspended on disconnect) with its chat and a worker it started."""
    session = create_session(
        alice.user,
        client_type=client_type,
        project_id=alice.project_id,
        fingerprint=FINGERPRINT,
        on_suspend=on_suspend,
    )
    work = create_process(session, recipe="ford", goal="count the moons")
    # IDLE alone can be seen before the queued goal turn starts; wait for its answer too
    wait_until(
        lambda: (
            ThinkProcess.objects.get(pk=work.pk).status == Status.IDLE
            and ConversationMessage.objects.filter(process_id=work.pk, role="assistant").exists()
        )
    )
    return session, work.pk


def status(process_id: int | None) -> str:
    assert process_id is not None
    return ThinkProcess.objects.get(pk=process_id).status


@pytest.mark.parametrize(
    ("client_type", "policy"),
    [("cli", "SUSPEND_ALL"), ("desktop", "SUSPEND_ALL"), ("web", "KEEP"), ("mobile", "KEEP")],
)
def test_the_default_policy_cascades_for_clients_that_carry_client_tools(
    alice: Tenancy, client_type: str, policy: str
) -> None:
    session = create_session(
        alice.user, client_type=client_type, project_id=alice.project_id, fingerprint=FINGERPRINT
    )
    assert session.on_suspend == policy


def test_by_default_a_suspended_web_session_keeps_its_work_running(alice: Tenancy) -> None:
    # given a web session with its chat and a worker, and the default policy
    session, work = session_with_work(alice, client_type="web")
    assert session.on_suspend == "KEEP"
    # when its client goes away
    disconnect_session(session.pk, SuspendCause.DISCONNECT)
    # then the session and its chat are suspended, the work is not
    assert Session.objects.get(pk=session.pk).status == SessionStatus.SUSPENDED
    assert status(session.chat_process_id) == Status.SUSPENDED
    assert status(work) == Status.IDLE
    # and the work still takes and answers messages
    steer_process(work, "and the rings?")
    wait_until(
        lambda: ConversationMessage.objects.filter(
            process_id=work, role="assistant", content="echo: and the rings?"
        ).exists()
    )
    # and when the client comes back, the chat is resumed
    resume_session(alice.user, session.pk, FINGERPRINT, None)
    assert status(session.chat_process_id) == Status.IDLE


def test_suspend_all_suspends_every_process_of_the_session(alice: Tenancy) -> None:
    # given a session that asks for every process to suspend with it
    session, work = session_with_work(alice, on_suspend="SUSPEND_ALL", client_type="web")
    # when its client goes away
    disconnect_session(session.pk, SuspendCause.DISCONNECT)
    # then both are suspended, and a resume brings both back
    assert (status(session.chat_process_id), status(work)) == (Status.SUSPENDED,) * 2
    resume_session(alice.user, session.pk, FINGERPRINT, None)
    assert (status(session.chat_process_id), status(work)) == (Status.IDLE,) * 2


def test_a_cli_session_suspends_every_process_and_a_drifted_return_marks_each(
    alice: Tenancy,
) -> None:
    # given a vance CLI session (default policy) with its chat and a worker
    session, work = session_with_work(alice)
    # when its client goes away, then comes back in another directory
    disconnect_session(session.pk, SuspendCause.DISCONNECT)
    assert (status(session.chat_process_id), status(work)) == (Status.SUSPENDED,) * 2
    moved = FingerprintData(machine_id="m-1", working_dir="/elsewhere")
    resume_session(alice.user, session.pk, moved, None)
    # then each process waits, marked as drifted, for the person to decide
    rows = ThinkProcess.objects.filter(pk__in=[session.chat_process_id, work])
    assert {(row.status, row.context_drift) for row in rows} == {(Status.SUSPENDED, True)}


def test_a_disconnect_of_a_socket_whose_session_was_resumed_since_changes_nothing(
    alice: Tenancy,
) -> None:
    # given a cli session bound by one socket, then resumed by a second one (a reloaded page)
    # that registered its tools
    session = create_session(
        alice.user, client_type="cli", project_id=alice.project_id, fingerprint=FINGERPRINT
    )
    first_binding = session.binding
    resumed = resume_session(alice.user, session.pk, FINGERPRINT, None).session
    assert resumed.binding != first_binding
    register_tools(resumed, [TOOL])
    # when the first socket's disconnect is handled only now
    disconnect_session(session.pk, SuspendCause.DISCONNECT, binding=first_binding)
    # then the session stays open for the second socket, with its chat and its tools
    after = Session.objects.get(pk=session.pk)
    assert after.status == SessionStatus.OPEN
    assert [tool["name"] for tool in after.client_tools] == [TOOL["name"]]
    assert status(session.chat_process_id) == Status.IDLE
    # and the second socket's own disconnect still applies the policy
    disconnect_session(session.pk, SuspendCause.DISCONNECT, binding=after.binding)
    assert Session.objects.get(pk=session.pk).status == SessionStatus.SUSPENDED
    assert status(session.chat_process_id) == Status.SUSPENDED
    # and a client that resumes it brings its own tools: the old ones are not offered to it
    resume_session(alice.user, session.pk, FINGERPRINT, None)
    assert Session.objects.get(pk=session.pk).client_tools == []


def test_a_resume_while_a_disconnect_suspends_the_chat_leaves_the_chat_running(
    alice: Tenancy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a cli session, whose socket leaves; a new socket resumes the session right after
    # the disconnect suspended the session and before it reached the chat process
    session = create_session(
        alice.user, client_type="cli", project_id=alice.project_id, fingerprint=FINGERPRINT
    )
    suspend_process = lifecycle.suspend_process
    resumed: list[Session] = []

    def suspend_after_a_resume(process_id: int) -> ThinkProcess:
        if not resumed:
            resumed.append(resume_session(alice.user, session.pk, FINGERPRINT, None).session)
        return suspend_process(process_id)

    monkeypatch.setattr(lifecycle, "suspend_process", suspend_after_a_resume)
    # when the disconnect runs
    disconnect_session(session.pk, SuspendCause.DISCONNECT, binding=session.binding)
    # then the resume came in the middle of it, and the session and its chat are open
    assert resumed
    assert resumed[0].status == SessionStatus.OPEN
    assert Session.objects.get(pk=session.pk).status == SessionStatus.OPEN
    assert status(session.chat_process_id) == Status.IDLE
