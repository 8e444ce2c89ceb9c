"""REST /api/processes: authentication, scoping, pagination, filters and lifecycle commands."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from processes.actions import lifecycle
from processes.actions.create import create_process
from processes.actions.lifecycle import pause_process
from processes.actions.steer import steer_process
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.states import Status
from recipes_app.models import Recipe, RecipeCategory, RecipeScope
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def listed_ids(response) -> list[str]:
    return [row["id"] for row in response.json()["results"]]


def snapshot(process_id: int) -> tuple[str, str, object, int, int]:
    """What an illegal call must leave untouched."""
    process = ThinkProcess.objects.get(pk=process_id)
    return (
        process.status,
        process.close_reason,
        process.updated_at,
        PendingMessage.objects.filter(process_id=process_id).count(),
        ProcessTransition.objects.filter(process_id=process_id).count(),
    )


# --- authentication ------------------------------------------------------------------------------


def test_request_without_a_token_is_refused_with_401_and_says_why(alice):
    # when
    response = APIClient().get("/api/processes")
    # then
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json() == {
        "code": 401,
        "error": "unauthenticated",
        "message": "Authentication credentials were not provided.",
    }


def test_request_with_a_wrong_token_is_refused_with_401(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer vt_not-a-real-token")
    # when
    response = client.get("/api/processes")
    # then
    assert response.status_code == 401
    assert response.json()["message"] == "invalid or revoked API token"


def test_a_revoked_token_is_refused_with_401(alice):
    ApiToken.objects.filter(user=alice.user).update(revoked_at=timezone.now())
    # when
    response = alice.api().get("/api/processes")
    # then
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"


def test_an_authorization_header_of_another_scheme_is_refused_naming_bearer(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {alice.token}")
    # when
    response = client.get("/api/processes")
    # then
    assert response.status_code == 401
    assert "Bearer <token>" in response.json()["message"]


@pytest.mark.parametrize("scheme", ["Bearer", "Token", "bearer"])
def test_token_is_accepted_with_bearer_or_token_scheme(alice, scheme):
    open_session(alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {alice.token}")
    # when
    response = client.get("/api/processes")
    # then
    assert response.status_code == 200
    assert response.json()["count"] == 1


# --- list, filters, pagination -------------------------------------------------------------------


def test_list_is_paginated_by_limit_and_offset_newest_first(alice):
    # given a chat process and three more
    session = open_session(alice)
    spawned = [
        create_process(session, goal=f"job {n}", engine="ford", start=False) for n in range(3)
    ]
    newest_first = [p.public_id for p in reversed(spawned)] + [f"tp_{session.chat_process_id}"]
    api = alice.api()
    # when
    first = api.get("/api/processes", {"limit": 2})
    second = api.get("/api/processes", {"limit": 2, "offset": 2})
    # then
    assert first.status_code == 200
    assert first.json()["count"] == 4
    assert listed_ids(first) == newest_first[:2]
    assert "offset=2" in first.json()["next"]
    assert first.json()["previous"] is None
    assert listed_ids(second) == newest_first[2:]
    assert second.json()["next"] is None


def test_list_rows_are_process_objects(alice):
    session = open_session(alice)
    # when
    response = alice.api().get("/api/processes")
    # then
    (row,) = response.json()["results"]
    assert row["id"] == f"tp_{session.chat_process_id}"
    assert row["sessionId"] == session.public_id
    # a person's session chats with arthur (session.defaultChatEngine)
    assert row["thinkEngine"] == "arthur"
    assert row["recipe"] == "arthur"
    assert row["status"] == "IDLE"
    assert row["usage"] == {"promptTokens": 0, "completionTokens": 0, "estimated": False}


def test_list_filters_by_status_session_and_engine(alice):
    # given two sessions, one with a process that was not started
    first = open_session(alice)
    second = open_session(alice)
    waiting = create_process(second, goal="later", engine="ford", start=False)
    api = alice.api()
    # when
    by_status = api.get("/api/processes", {"status": "INIT"})
    by_session = api.get("/api/processes", {"session": second.public_id})
    by_engine = api.get("/api/processes", {"engine": "ford"})
    by_other_engine = api.get("/api/processes", {"engine": "marvin"})
    # then
    assert listed_ids(by_status) == [waiting.public_id]
    assert listed_ids(by_session) == [waiting.public_id, f"tp_{second.chat_process_id}"]
    assert f"tp_{first.chat_process_id}" not in listed_ids(by_session)
    # the waiting ford worker; the two sessions chat with arthur
    assert listed_ids(by_engine) == [waiting.public_id]
    assert by_other_engine.json() == {"count": 0, "next": None, "previous": None, "results": []}


def test_an_unknown_status_filter_is_a_400_naming_the_statuses(alice):
    response = alice.api().get("/api/processes", {"status": "SLEEPING"})
    assert response.status_code == 400
    body = response.json()
    assert (body["code"], body["error"]) == (400, "bad-request")
    assert body["message"].startswith("status must be one of INIT, RUNNING, IDLE")


def test_a_malformed_session_filter_is_a_400(alice):
    response = alice.api().get("/api/processes", {"session": "42"})
    assert response.status_code == 400
    assert "sess_12" in response.json()["message"]


# --- detail --------------------------------------------------------------------------------------


def test_detail_includes_conversation_pending_count_and_task_tree(alice):
    session = open_session(alice)
    process = create_process(session, goal="what is 6 x 7?", engine="ford")
    wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).conversation_length == 2)
    # when
    response = alice.api().get(f"/api/processes/{process.public_id}")
    # then
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == process.public_id
    assert body["goal"] == "what is 6 x 7?"
    assert body["pending"] == 0
    assert "taskTree" in body
    assert [(m["role"], m["content"]) for m in body["conversation"]] == [
        ("user", "what is 6 x 7?"),
        ("assistant", "echo: what is 6 x 7?"),
    ]
    assert body["conversationLength"] == 2


def test_detail_counts_messages_waiting_while_paused(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    pause_process(chat_id)
    steer_process(chat_id, "one")
    steer_process(chat_id, "two")
    # when
    response = alice.api().get(f"/api/processes/tp_{chat_id}")
    # then
    assert response.json()["pending"] == 2
    assert response.json()["status"] == "PAUSED"


def test_detail_can_be_limited_to_the_last_messages(alice):
    session = open_session(alice)
    process = create_process(session, goal="hello", engine="ford")
    wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).conversation_length == 2)
    api = alice.api()
    # when
    last = api.get(f"/api/processes/{process.public_id}", {"messages": 1})
    bad = api.get(f"/api/processes/{process.public_id}", {"messages": "many"})
    # then
    assert [m["content"] for m in last.json()["conversation"]] == ["echo: hello"]
    assert bad.status_code == 400
    assert "messages must be a whole number" in bad.json()["message"]


def test_a_malformed_process_id_is_a_404(alice):
    response = alice.api().get("/api/processes/12")
    assert response.status_code == 404
    assert response.json()["error"] == "not-found"


# --- scoping -------------------------------------------------------------------------------------


def test_another_tenants_process_is_404_and_not_listed(alice, bob):
    # given
    open_session(alice)
    bobs = open_session(bob)
    bobs_chat = f"tp_{bobs.chat_process_id}"
    api = alice.api()
    # when
    detail = api.get(f"/api/processes/{bobs_chat}")
    listing = api.get("/api/processes")
    filtered = api.get("/api/processes", {"session": bobs.public_id})
    # then
    assert detail.status_code == 404
    assert detail.json() == {
        "code": 404,
        "error": "not-found",
        "message": f"process {bobs_chat} not found",
    }
    assert bobs_chat not in listed_ids(listing)
    assert listing.json()["count"] == 1
    assert filtered.json()["count"] == 0


@pytest.mark.parametrize("verb", ["pause", "stop", "steer"])
def test_another_tenants_process_cannot_be_commanded(alice, bob, verb):
    bobs = open_session(bob)
    before = snapshot(bobs.chat_process_id)
    # when
    response = alice.api().post(
        f"/api/processes/tp_{bobs.chat_process_id}/{verb}", {"message": "hijack"}, format="json"
    )
    # then
    assert response.status_code == 404
    assert snapshot(bobs.chat_process_id) == before


def test_a_service_process_the_user_created_is_listed_under_its_filter_shown_and_stopped(alice):
    # given a service recipe of the project, and a process the user spawned from it
    Recipe.objects.create(
        name="sweeper",
        engine="ford",
        category=RecipeCategory.SERVICE,
        scope=RecipeScope.PROJECT,
        project=alice.project,
        tenant=alice.tenant,
    )
    session = open_session(alice)
    service = create_process(session, goal="sweep", recipe="sweeper")
    assert service.category == "service"
    api = alice.api()
    # when
    listing = api.get("/api/processes")
    services = api.get("/api/processes?category=service")
    detail = api.get(f"/api/processes/{service.public_id}")
    stopped = api.post(f"/api/processes/{service.public_id}/stop")
    # then it is the user's, listed under the service filter, not in the ordinary list
    assert listed_ids(listing) == [f"tp_{session.chat_process_id}"]
    assert listed_ids(services) == [service.public_id]
    assert detail.status_code == 200
    assert stopped.status_code == 200, stopped.json()
    assert (stopped.json()["status"], stopped.json()["closeReason"]) == ("CLOSED", "STOPPED")


# --- lifecycle -----------------------------------------------------------------------------------


def test_lifecycle_commands_answer_with_the_process_in_its_new_status(alice):
    session = open_session(alice)
    url = f"/api/processes/tp_{session.chat_process_id}"
    api = alice.api()
    # when / then: each command in turn
    paused = api.post(f"{url}/pause")
    assert (paused.status_code, paused.json()["status"]) == (200, "PAUSED")
    resumed = api.post(f"{url}/resume")
    assert (resumed.status_code, resumed.json()["status"]) == (200, "IDLE")
    stopped = api.post(f"{url}/stop")
    assert stopped.status_code == 200
    assert (stopped.json()["status"], stopped.json()["closeReason"]) == ("CLOSED", "STOPPED")
    reset = api.post(f"{url}/reset")
    assert (reset.status_code, reset.json()["status"], reset.json()["closeReason"]) == (
        200,
        "INIT",
        None,
    )
    started = api.post(f"{url}/start")
    assert (started.status_code, started.json()["status"]) == (200, "IDLE")
    calls = list(
        ProcessTransition.objects.filter(process_id=session.chat_process_id).values_list(
            "call", flat=True
        )
    )
    assert calls == ["start", "pause", "resume", "stop", "reset", "start"]


def test_steer_on_a_paused_process_is_accepted_and_waits(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    pause_process(chat_id)
    # when
    response = alice.api().post(
        f"/api/processes/tp_{chat_id}/steer", {"message": "focus on 2024"}, format="json"
    )
    # then
    assert response.status_code == 200
    assert response.json() == {"processId": f"tp_{chat_id}", "pending": 1, "seq": 1}
    assert ThinkProcess.objects.get(pk=chat_id).status == Status.PAUSED
    assert not ConversationMessage.objects.filter(process_id=chat_id).exists()


def test_steer_on_an_idle_chat_process_is_answered(alice):
    session = open_session(alice)
    url = f"/api/processes/tp_{session.chat_process_id}"
    api = alice.api()
    # when
    response = api.post(f"{url}/steer", {"message": "hello there"}, format="json")
    # then
    assert response.status_code == 200
    assert response.json()["pending"] == 1

    def answered():
        body = api.get(url).json()
        contents = [m["content"] for m in body["conversation"]]
        return body["status"] == "IDLE" and "echo: hello there" in contents and body

    body = wait_until(answered)
    assert [(m["role"], m["content"]) for m in body["conversation"]] == [
        ("user", "hello there"),
        ("assistant", "echo: hello there"),
    ]
    assert body["pending"] == 0


def test_steer_without_a_message_is_a_400_naming_the_field(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    before = snapshot(chat_id)
    # when
    response = alice.api().post(f"/api/processes/tp_{chat_id}/steer", {}, format="json")
    # then
    assert response.status_code == 400
    body = response.json()
    assert (body["code"], body["error"], body["field"]) == (400, "bad-request", "message")
    assert body["message"].startswith("message:")
    assert "message" in body["fields"]
    assert snapshot(chat_id) == before


@pytest.mark.parametrize(
    ("setup", "verb", "expected"),
    [
        (["stop_process"], "steer", "cannot steer process tp_{id}: it is CLOSED/STOPPED"),
        ([], "resume", "cannot resume process tp_{id}: it is IDLE"),
        ([], "start", "cannot start process tp_{id}: it is IDLE"),
        ([], "reset", "cannot reset process tp_{id}: it is IDLE"),
        (["pause_process"], "pause", "cannot pause process tp_{id}: it is PAUSED"),
        (["stop_process"], "stop", "cannot stop process tp_{id}: it is CLOSED/STOPPED"),
        (["suspend_process"], "steer", "cannot steer process tp_{id}: it is SUSPENDED"),
    ],
)
def test_an_illegal_lifecycle_command_is_a_409_and_changes_nothing(alice, setup, verb, expected):
    session = open_session(alice)
    chat_id = session.chat_process_id
    for step in setup:
        getattr(lifecycle, step)(chat_id)
    before = snapshot(chat_id)
    # when
    response = alice.api().post(
        f"/api/processes/tp_{chat_id}/{verb}", {"message": "are you there?"}, format="json"
    )
    # then
    assert response.status_code == 409
    assert response.json() == {
        "code": 409,
        "error": "conflict",
        "message": expected.format(id=chat_id),
    }
    assert snapshot(chat_id) == before


def test_lifecycle_commands_are_post_only(alice):
    session = open_session(alice)
    response = alice.api().get(f"/api/processes/tp_{session.chat_process_id}/pause")
    assert response.status_code == 405
    assert response.json()["code"] == 405
    assert ThinkProcess.objects.get(pk=session.chat_process_id).status == Status.IDLE


def test_a_form_body_is_a_400_naming_the_content_type_and_queues_nothing(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    before = snapshot(chat_id)
    # when: the steer's body is a form, not JSON
    response = alice.api().post(f"/api/processes/tp_{chat_id}/steer", {"message": "hi"})
    # then
    assert response.status_code == 400
    body = response.json()
    assert (body["code"], body["error"]) == (400, "bad-request")
    assert body["message"].startswith("Content-Type: ")
    assert body["message"].endswith("send application/json")
    assert snapshot(chat_id) == before
