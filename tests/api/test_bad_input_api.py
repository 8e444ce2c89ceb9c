"""Bad input over REST is a 400 or 404 naming the field, never a 500 (run on PostgreSQL too:
it refuses NUL characters that SQLite stores)."""

from __future__ import annotations

import pytest

from processes.models import PendingMessage
from recipes_app.models import Recipe, RecipeScope
from tests.support.tenancy import open_session

pytestmark = pytest.mark.django_db(transaction=True)

ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
BEYOND_64_BITS = str(2**64)


@pytest.mark.parametrize("process_id", ["tp_²", "tp_①", "tp_" + "9" * 5000, "tp_" + "9" * 20])
def test_a_process_id_that_is_no_ascii_64_bit_number_is_a_404(alice, process_id):
    # when a process is asked for by an id that is no signed 64-bit ASCII number
    response = alice.api().get(f"/api/processes/{process_id}")
    # then it is not found
    assert response.status_code == 404, response.content[:300]
    assert response.json()["error"] == "not-found"


def test_a_process_id_in_arabic_indic_digits_is_not_the_process_with_that_number(alice):
    # given alice's chat process tp_N
    session = open_session(alice)
    digits = str(session.chat_process_id).translate(ARABIC_INDIC)
    # when it is asked for with the same number in Arabic-Indic digits
    response = alice.api().get(f"/api/processes/tp_{digits}")
    # then that is no id
    assert response.status_code == 404


def test_a_session_filter_beyond_64_bits_is_a_400_naming_it(alice):
    response = alice.api().get("/api/processes", {"session": "sess_99999999999999999999"})
    assert response.status_code == 400
    assert response.json()["message"].startswith("session must be")


@pytest.mark.parametrize("path", ["/api/processes", "/api/sessions", "/api/inbox"])
@pytest.mark.parametrize("name", ["limit", "offset"])
def test_a_page_parameter_beyond_64_bits_is_a_400_naming_it(alice, path, name):
    # given something to list
    open_session(alice)
    # when a page is asked for with a limit or offset too large for any database
    response = alice.api().get(path, {name: BEYOND_64_BITS})
    # then it is refused naming the parameter
    assert response.status_code == 400, response.content[:300]
    assert response.json()["message"].startswith(f"{name} must be a whole number")


def test_a_page_parameter_within_64_bits_still_pages(alice):
    open_session(alice)
    response = alice.api().get("/api/processes", {"limit": 2**63 - 1, "offset": 0})
    assert response.status_code == 200
    assert response.json()["count"] == 1


def test_a_messages_limit_beyond_64_bits_is_a_400_naming_it(alice):
    session = open_session(alice)
    response = alice.api().get(
        f"/api/processes/tp_{session.chat_process_id}", {"messages": BEYOND_64_BITS}
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("messages must be a whole number")


def test_a_body_nested_100000_deep_is_a_400(alice):
    # given alice's chat process
    session = open_session(alice)
    # when a steer's body is JSON nested 100,000 arrays deep
    body = "[" * 100_000 + "]" * 100_000
    response = alice.api().post(
        f"/api/processes/tp_{session.chat_process_id}/steer", body, content_type="application/json"
    )
    # then it is refused as a malformed body, and nothing is queued
    assert response.status_code == 400, response.content[:300]
    assert "nested too deeply" in response.json()["message"]
    assert PendingMessage.objects.filter(process_id=session.chat_process_id).count() == 0


def test_a_nul_character_in_a_steer_is_a_400_naming_the_field(alice):
    session = open_session(alice)
    response = alice.api().post(
        f"/api/processes/tp_{session.chat_process_id}/steer", {"message": "a\x00b"}, format="json"
    )
    assert response.status_code == 400
    assert "message" in response.json()["fields"]
    assert PendingMessage.objects.filter(process_id=session.chat_process_id).count() == 0


def test_the_recipes_list_shows_tenant_and_project_recipes(alice):
    # given a tenant recipe and a project recipe
    Recipe.objects.create(
        name="team-chat", engine="ford", scope=RecipeScope.TENANT, tenant=alice.tenant
    )
    Recipe.objects.create(
        name="project-chat", engine="ford", scope=RecipeScope.PROJECT, project=alice.project
    )
    # when the recipes are listed
    response = alice.api().get("/api/recipes", {"project": alice.project_id})
    # then both are there
    assert response.status_code == 200, response.content[:300]
    names = {row["name"] for row in response.json()["results"]}
    assert {"team-chat", "project-chat"} <= names


def test_a_body_of_an_unsupported_content_type_is_a_400_naming_the_header(alice):
    session = open_session(alice)
    response = alice.api().generic(
        "POST",
        f"/api/processes/tp_{session.chat_process_id}/steer",
        "message=hi",
        content_type="text/plain",
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("Content-Type:")
