"""A task that stopped at a client tool because no client offered it goes on when a client
offers that tool; and a restarted embedded Brain gives each session its dead socket held the
disconnect policy the crash skipped, keeping the calls that client owed for their retried
turns to decide (tests/e2e/test_journal_crash.py shows both across a real restart)."""

from __future__ import annotations

import pytest

from processes import transitions
from processes.actions.sessions import disconnect_dead_clients
from processes.lane import dispatch
from processes.models import ThinkProcess
from processes.states import Call, Status
from sessions_app.models import DisconnectPolicy, Session, SessionStatus
from sessions_app.services import register_tools
from tests.support.tenancy import open_session
from vancetope.tools.errors import ClientToolRequired
from vancetope.tools.models import CallStatus, Location, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

SHELL = {"name": "run_shell", "description": "run", "parameters": {"type": "object"}}


@pytest.fixture
def woken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    recorded: list[int] = []
    monkeypatch.setattr(dispatch, "dispatch_drive", recorded.append)
    return recorded


def blocked_on(process: ThinkProcess, tool: str) -> None:
    """As a turn that called `tool` with no client bound leaves it."""
    transitions.apply(process, Call.TURN, Status.RUNNING)
    reason = ClientToolRequired(tool).reason
    transitions.apply(process, Call.TURN_END, Status.BLOCKED, changes={"last_error": reason})


def test_a_task_waiting_for_a_client_tool_goes_on_when_a_client_offers_it(alice, woken):
    # given a chat process that stopped at run_shell with no client bound
    session = open_session(alice)
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    blocked_on(chat, "run_shell")
    # when a client registers another tool, nothing wakes; when it offers run_shell, it does
    register_tools(session, [{**SHELL, "name": "read_file"}])
    assert woken == []
    register_tools(session, [SHELL])
    assert woken == [chat.pk]


def test_a_restarted_embedded_brain_applies_the_disconnect_its_crash_skipped(alice):
    # given a person's session that looked bound when the Brain died, its client owing a call,
    # a KEEP_OPEN one, and a tool client's session that no socket holds
    held = open_session(alice)
    Session.objects.filter(pk=held.pk).update(client_tools=[SHELL])
    owed = ToolCall.objects.create(
        process_id=held.chat_process_id,
        session=held,
        tool="run_shell",
        location=Location.CLIENT,
        status=CallStatus.PENDING,
    )
    kept = open_session(alice)
    Session.objects.filter(pk=kept.pk).update(
        client_tools=[SHELL], on_disconnect=DisconnectPolicy.KEEP_OPEN
    )
    tool_client = open_session(alice, client_type="mcp")
    # when the Brain starts again
    assert disconnect_dead_clients() == 2
    # then the first is suspended, as a shutdown would have left it, its declarations kept
    # and the call it owed still PENDING (its retried turn decides: replayed or asked)
    held.refresh_from_db()
    assert held.status == SessionStatus.SUSPENDED
    assert [tool["name"] for tool in held.client_tools] == ["run_shell"]
    owed.refresh_from_db()
    assert owed.status == CallStatus.PENDING
    # the KEEP_OPEN one stays open with no client tools, the tool client's is untouched
    kept.refresh_from_db()
    assert (kept.status, kept.client_tools) == (SessionStatus.OPEN, [])
    tool_client.refresh_from_db()
    assert tool_client.status == SessionStatus.OPEN
