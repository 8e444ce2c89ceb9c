"""A person cannot open a system client's session (cron, webhook, brain_linker, workflow): a
403 naming the client type, and nothing is made. Such sessions are the Brain's own, opened
with `system=True` by the cron firing, the webhook delivery, the workflow run and the linker.
Before, a person got a session that was neither human nor system. And a system client keeps
no chat history: its session stores no chat-message events."""

from __future__ import annotations

import pytest

from processes.actions.sessions import create_session
from processes.actions.steer import steer_process
from processes.models import ConversationMessage
from sessions_app.models import Session, SessionEvent
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until
from tests.support.ws import bearer, connect
from vancetope.errors import Forbidden

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("client_type", ["cron", "webhook", "brain_linker", "workflow"])
def test_a_person_cannot_open_a_system_clients_session(alice: Tenancy, client_type: str) -> None:
    # when a person asks for a session of a system client's type
    with pytest.raises(Forbidden, match=f"clientType {client_type}"):
        create_session(
            alice.user,
            client_type=client_type,
            project_id=alice.project_id,
            fingerprint=FingerprintData(machine_id="m-1"),
        )
    # then nothing was made
    assert not Session.objects.exists()


def test_the_brain_opens_them_as_system_sessions(alice: Tenancy) -> None:
    session = create_session(
        alice.user, client_type="cron", project_id=alice.project_id, system=True, chat=False
    )
    assert (session.system, session.is_human) == (True, False)


@pytest.mark.django_db(transaction=True)
def test_a_system_session_keeps_no_chat_history(alice: Tenancy) -> None:
    # given a system client's session (a cron job's) and a person's
    system = open_session(alice, "cron", system=True)
    person = open_session(alice)
    # when a message reaches each chat process and is answered
    for session in (system, person):
        chat_id = session.chat_process_id
        assert chat_id is not None
        steer_process(chat_id, "hello")
        answers = ConversationMessage.objects.filter(process_id=chat_id, role="assistant")
        wait_until(answers.exists)

    # then the system session stored no chat-message event; the person's did
    def stored(session: Session) -> set[str]:
        return set(SessionEvent.objects.filter(session=session).values_list("event", flat=True))

    assert "chat-message" not in stored(system)
    assert "chat-message" in stored(person)


@pytest.mark.django_db(transaction=True)
async def test_over_the_websocket_a_system_client_type_is_a_403_naming_it(alice: Tenancy) -> None:
    # given a person's socket
    client = await connect(bearer(alice))
    # when it asks for a webhook client's session
    reply = await client.request(
        "session-create", {"clientType": "webhook", "projectId": alice.project_id}
    )
    # then it is refused, naming the client type, and the socket stays usable
    assert reply["type"] == "error", reply
    assert reply["data"]["code"] == 403
    assert "clientType webhook" in reply["data"]["message"]
    created = await client.request(
        "session-create", {"clientType": "cli", "projectId": alice.project_id}
    )
    assert created["type"] == "session-created", created
    await client.ws.disconnect()


def test_every_client_type_has_a_disconnect_policy() -> None:
    # a client type without one was a KeyError, a 500, on its first session-create
    from processes.actions.sessions import DEFAULT_ON_DISCONNECT
    from protocol.vocabulary import ClientType

    assert set(ClientType) == set(DEFAULT_ON_DISCONNECT)


@pytest.mark.django_db(transaction=True)
async def test_over_the_websocket_an_a2a_client_type_gets_its_session(alice: Tenancy) -> None:
    # given a person's socket
    client = await connect(bearer(alice))
    # when it opens a session as another agent would (clientType a2a)
    reply = await client.request(
        "session-create", {"clientType": "a2a", "projectId": alice.project_id}
    )
    # then it is a session that outlives the socket, as the A2A face's do (before: a 500)
    assert reply["type"] == "session-created", reply
    session = reply["data"]["session"]
    assert (session["clientType"], session["onDisconnect"]) == ("a2a", "KEEP_OPEN")
    await client.ws.disconnect()
