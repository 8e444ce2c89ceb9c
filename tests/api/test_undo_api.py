"""REST: POST /api/processes/{id}/undo and /api/processes/{id}/messages/{seq}/unsend."""

from __future__ import annotations

import pytest

from processes.actions import lifecycle, steer
from processes.models import ConversationMessage, PendingMessage, ThinkProcess
from processes.states import Status
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def chatted(session_id: int, text: str) -> None:
    sent = steer.send_chat(session_id, text).message
    wait_until(lambda: PendingMessage.objects.filter(pk=sent.pk, consumed=True).exists())
    wait_until(lambda: ThinkProcess.objects.filter(pk=sent.process_id, status=Status.IDLE).exists())


def test_undo_answers_with_the_process_and_what_was_taken_back(alice, script):
    script([{"reply": "ack"}])
    session = open_session(alice)
    chatted(session.pk, "one")
    response = alice.api().post(f"/api/processes/tp_{session.chat_process_id}/undo")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["process"]["id"] == f"tp_{session.chat_process_id}"
    assert body["undone"] == {
        "seq": 1,
        "text": "one",
        "messages": 2,
        "stoppedProcesses": [],
        "dismissedItems": [],
        "notUndone": [],
    }
    detail = alice.api().get(f"/api/processes/tp_{session.chat_process_id}").json()
    assert detail["conversation"] == []
    assert detail["conversationLength"] == 2
    # kept in the database, marked undone by alice
    assert set(
        ConversationMessage.objects.filter(process_id=session.chat_process_id).values_list(
            "undone_by__username", flat=True
        )
    ) == {"user-alice"}
    # nothing left: 409
    again = alice.api().post(f"/api/processes/tp_{session.chat_process_id}/undo")
    assert again.status_code == 409
    assert "no turn to undo" in again.json()["message"]


def test_undo_on_a_system_session_is_409_and_another_tenants_process_is_404(alice, bob, script):
    script([{"reply": "ack"}])
    system = open_session(alice, system=True)
    chatted(system.pk, "one")
    refused = alice.api().post(f"/api/processes/tp_{system.chat_process_id}/undo")
    assert refused.status_code == 409
    assert "undo is for human clients" in refused.json()["message"]
    assert ConversationMessage.objects.filter(undone_at__isnull=False).count() == 0
    bobs = open_session(bob)
    assert alice.api().post(f"/api/processes/tp_{bobs.chat_process_id}/undo").status_code == 404


def test_unsend_withdraws_a_pending_message_and_refuses_bad_or_answered_ones(alice, script):
    script([{"reply": "ack"}])
    session = open_session(alice)
    pk = session.chat_process_id
    assert pk is not None
    lifecycle.pause_process(pk)
    steered = steer.send_chat(session.pk, "oops")
    url = f"/api/processes/tp_{pk}/messages"
    api = alice.api()
    # a seq that is not a number is a 400 naming it; one that does not exist a 404
    bad = api.post(f"{url}/first/unsend")
    assert bad.status_code == 400
    assert "seq" in bad.json()["message"]
    assert api.post(f"{url}/99/unsend").status_code == 404
    # when the pending message is unsent
    response = api.post(f"{url}/{steered.message.seq}/unsend")
    # then it is withdrawn: nothing waits, and a resume answers nothing
    assert response.status_code == 200
    assert response.json() == {"processId": f"tp_{pk}", "seq": 1}
    assert ThinkProcess.objects.get(pk=pk).waiting == 0
    lifecycle.resume_process(pk)
    chatted(session.pk, "hello")
    contents = ConversationMessage.objects.filter(process_id=pk).values_list("content", flat=True)
    assert list(contents.order_by("index")) == ["hello", "ack"]
    # and an answered message is a 409 that points to undo
    answered = api.post(f"{url}/2/unsend")
    assert answered.status_code == 409
    assert "process-undo" in answered.json()["message"]
