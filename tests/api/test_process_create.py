"""POST /api/processes: a person creates a process in one of their sessions over REST."""

from __future__ import annotations

import pytest

from processes.actions.lifecycle import stop_process
from processes.actions.sessions import close_session, suspend_session
from processes.models import ThinkProcess
from sessions_app.models import SuspendCause
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_starts_a_process_of_the_named_recipe_in_the_callers_session(alice):
    session = open_session(alice)
    # when
    response = alice.api().post(
        "/api/processes",
        {"session": session.public_id, "recipe": "ford", "goal": "say hello"},
        format="json",
    )
    # then: 201 with the process, started, in that session
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["sessionId"], body["recipe"], body["thinkEngine"], body["goal"]) == (
        session.public_id,
        "ford",
        "ford",
        "say hello",
    )
    assert body["status"] != "INIT"
    row = ThinkProcess.objects.get(pk=int(body["id"].removeprefix("tp_")))
    assert row.session_id == session.pk


def test_create_with_start_false_leaves_it_init_and_start_starts_it(alice):
    session = open_session(alice)
    api = alice.api()
    created = api.post(
        "/api/processes",
        {"session": session.public_id, "thinkEngine": "ford", "start": False},
        format="json",
    ).json()
    assert created["status"] == "INIT"
    # when
    started = api.post(f"/api/processes/{created['id']}/start")
    # then
    assert started.status_code == 200
    assert started.json()["status"] in {"IDLE", "RUNNING"}


def test_a_wrong_engine_is_a_400_naming_the_field_and_listing_the_known_engines(alice):
    session = open_session(alice)
    # when
    response = alice.api().post(
        "/api/processes",
        {"session": session.public_id, "thinkEngine": "fordd"},
        format="json",
    )
    # then
    assert response.status_code == 400
    message = response.json()["message"]
    assert message.startswith("thinkEngine: no think engine 'fordd'; known: ")
    for engine in ("arthur", "ford", "marvin", "zaphod"):
        assert engine in message
    assert ThinkProcess.objects.filter(session=session).count() == 1  # only its chat


def test_a_wrong_recipe_is_a_400_naming_the_field_and_listing_the_known_recipes(alice):
    session = open_session(alice)
    # when
    response = alice.api().post(
        "/api/processes", {"session": session.public_id, "recipe": "nope"}, format="json"
    )
    # then
    assert response.status_code == 400
    message = response.json()["message"]
    assert message.startswith(f"recipe: no recipe 'nope' in project {alice.project_id}; known: ")
    assert "ford" in message
    assert "marvin" in message


def test_a_missing_or_malformed_session_is_a_400_naming_it(alice):
    api = alice.api()
    missing = api.post("/api/processes", {"recipe": "ford"}, format="json")
    assert missing.status_code == 400
    assert missing.json()["message"].startswith("session: ")
    malformed = api.post("/api/processes", {"session": "tp_1"}, format="json")
    assert malformed.status_code == 400
    assert malformed.json()["message"] == "session: must be a session id like sess_12, not 'tp_1'"


def test_another_users_session_is_a_404_and_nothing_is_created(alice, bob):
    bobs = open_session(bob)
    before = ThinkProcess.objects.count()
    # when
    response = alice.api().post(
        "/api/processes", {"session": bobs.public_id, "recipe": "ford"}, format="json"
    )
    # then
    assert response.status_code == 404
    assert ThinkProcess.objects.count() == before


def test_a_suspended_session_takes_a_process_and_a_closed_one_is_a_409(alice):
    session = open_session(alice)
    wait_until(lambda: ThinkProcess.objects.get(pk=session.chat_process_id).status == "IDLE")
    suspend_session(session.pk, SuspendCause.DISCONNECT)
    api = alice.api()
    # when: the session is SUSPENDED (its client left)
    created = api.post(
        "/api/processes", {"session": session.public_id, "recipe": "ford"}, format="json"
    )
    # then it is created there
    assert created.status_code == 201, created.json()
    stop_process(int(created.json()["id"].removeprefix("tp_")))
    close_session(session.pk)
    before = ThinkProcess.objects.count()
    # when: the session is CLOSED
    refused = api.post(
        "/api/processes", {"session": session.public_id, "recipe": "ford"}, format="json"
    )
    # then 409, nothing created
    assert refused.status_code == 409
    assert refused.json()["message"] == f"session {session.public_id} is CLOSED"
    assert ThinkProcess.objects.count() == before


@pytest.mark.parametrize(
    ("name", "value"),
    [("maxTokens", "lots"), ("maxChildren", -1), ("maxDepth", 0), ("maxWallSeconds", True)],
)
def test_a_budget_param_that_is_not_a_positive_number_is_a_400_naming_it(alice, name, value):
    # given a session of alice's
    session = open_session(alice)
    body = {"session": session.public_id, "recipe": "ford", "goal": "x", "params": {name: value}}
    # when she creates a process with that budget (before: silently ignored, unbounded)
    answer = alice.api().post("/api/processes", body, format="json")
    # then it is a 400 naming the param, and nothing is created
    assert answer.status_code == 400, answer.json()
    assert answer.json()["field"] == f"params.{name}"
    assert f"params.{name}" in answer.json()["message"]
    assert not ThinkProcess.objects.exclude(pk=session.chat_process_id).exists()
