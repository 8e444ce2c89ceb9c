"""REST /api/sessions: the caller's sessions, their filters and scoping."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from processes.actions.sessions import close_session, create_session
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.django_db(transaction=True)


def open_session(tenancy: Tenancy, client_type: str = "cli", *, system: bool = False):
    return create_session(
        tenancy.user,
        client_type=client_type,
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work", os_user="arthur"),
        system=system,
    )


def listed_ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def test_sessions_need_a_token(alice):
    open_session(alice)
    response = APIClient().get("/api/sessions")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"


def test_list_shows_the_callers_sessions_newest_first(alice):
    # given
    first = open_session(alice)
    second = open_session(alice, "web")
    # when
    response = alice.api().get("/api/sessions")
    # then
    assert listed_ids(response) == [second.public_id, first.public_id]
    assert response.json()["count"] == 2


def test_list_is_paginated(alice):
    sessions = [open_session(alice) for _ in range(3)]
    # when
    response = alice.api().get("/api/sessions", {"limit": 1, "offset": 1})
    # then
    assert response.json()["count"] == 3
    assert listed_ids(response) == [sessions[1].public_id]
    assert "offset=2" in response.json()["next"]
    assert "limit=1" in response.json()["previous"]


def test_detail_is_the_session_object(alice):
    session = open_session(alice)
    # when
    response = alice.api().get(f"/api/sessions/{session.public_id}")
    # then
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == session.public_id
    assert body["projectId"] == "proj_alice"
    assert (body["clientType"], body["isHuman"], body["system"]) == ("cli", True, False)
    assert body["status"] == "OPEN"
    assert body["onDisconnect"] == "SUSPEND"
    assert body["chatProcessId"] == f"tp_{session.chat_process_id}"
    assert body["fingerprint"] == {
        "machineId": "m-1",
        "workingDir": "/work",
        "userHome": None,
        "osUser": "arthur",
    }


def test_list_filters_by_status(alice):
    open_one = open_session(alice)
    closed = open_session(alice)
    close_session(closed.pk)
    api = alice.api()
    # when / then
    assert listed_ids(api.get("/api/sessions", {"status": "CLOSED"})) == [closed.public_id]
    assert listed_ids(api.get("/api/sessions", {"status": "OPEN"})) == [open_one.public_id]
    assert listed_ids(api.get("/api/sessions", {"status": "SUSPENDED"})) == []


def test_list_filters_by_client_type_and_system(alice):
    person = open_session(alice, "cli")
    cron = open_session(alice, "cron", system=True)
    api = alice.api()
    # when / then
    assert listed_ids(api.get("/api/sessions", {"clientType": "cron"})) == [cron.public_id]
    assert listed_ids(api.get("/api/sessions", {"clientType": "cli"})) == [person.public_id]
    assert listed_ids(api.get("/api/sessions", {"system": "true"})) == [cron.public_id]
    assert listed_ids(api.get("/api/sessions", {"system": "1"})) == [cron.public_id]
    assert listed_ids(api.get("/api/sessions", {"system": "false"})) == [person.public_id]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "ASLEEP"}, "status must be one of OPEN, SUSPENDED, CLOSED"),
        ({"clientType": "telegraph"}, "clientType must be one of cli, desktop"),
        ({"system": "perhaps"}, "system must be true or false"),
    ],
)
def test_an_unknown_filter_value_is_a_400(alice, params, expected):
    open_session(alice)
    response = alice.api().get("/api/sessions", params)
    assert response.status_code == 400
    assert response.json()["error"] == "bad-request"
    assert response.json()["message"].startswith(expected)


def test_another_tenants_session_is_404_and_not_listed(alice, bob):
    # given
    mine = open_session(alice)
    bobs = open_session(bob)
    api = alice.api()
    # when
    detail = api.get(f"/api/sessions/{bobs.public_id}")
    listing = api.get("/api/sessions")
    # then
    assert detail.status_code == 404
    assert detail.json() == {
        "code": 404,
        "error": "not-found",
        "message": f"session {bobs.public_id} not found",
    }
    assert listed_ids(listing) == [mine.public_id]


def test_a_malformed_session_id_is_a_404(alice):
    response = alice.api().get("/api/sessions/tp_1")
    assert response.status_code == 404
    assert "ids look like sess_12" in response.json()["message"]
