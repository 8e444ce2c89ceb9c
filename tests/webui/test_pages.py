"""The web UI's pages through Django's test client: login, dashboard and interactive page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from processes.actions.lifecycle import pause_process
from processes.actions.steer import send_chat
from processes.models import ConversationMessage, ThinkProcess
from sessions_app.models import Session
from sessions_app.services import FingerprintData, create_session
from tests.conftest import Tenancy, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def open_session(tenancy: Tenancy) -> Session:
    return create_session(
        tenancy.user,
        client_type="web",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="browser"),
    )


def logged_in(tenancy: Tenancy) -> Client:
    client = Client()
    client.force_login(tenancy.user)
    return client


def listed(response: Any) -> list[str]:
    return [process.public_id for process in response.context["processes"]]


# --- login ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/processes/tp_1", "/interactive/"])
def test_every_page_sends_a_visitor_who_is_not_logged_in_to_the_login_page(db, path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_logging_in_with_the_password_opens_the_dashboard(alice):
    client = Client()
    # when
    response = client.post(
        reverse("webui:login"), {"username": "user-alice", "password": "pw-alice", "next": ""}
    )
    # then
    assert response.status_code == 302
    assert response["Location"] == reverse("webui:processes")
    assert client.get(reverse("webui:processes")).status_code == 200


def test_logging_in_with_a_wrong_password_shows_an_error_and_no_dashboard(alice):
    client = Client()
    response = client.post(reverse("webui:login"), {"username": "user-alice", "password": "nope"})
    assert response.status_code == 200
    assert "did not match" in response.content.decode()
    assert client.get(reverse("webui:processes")).status_code == 302


def test_logging_out_needs_a_post_and_ends_the_login(alice):
    client = logged_in(alice)
    response = client.post(reverse("webui:logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("webui:login")
    assert client.get(reverse("webui:processes")).status_code == 302


# --- dashboard -----------------------------------------------------------------------------------


def test_dashboard_lists_only_the_users_own_processes_newest_first(alice, bob):
    first = open_session(alice)
    second = open_session(alice)
    open_session(bob)
    # when
    response = logged_in(alice).get(reverse("webui:processes"))
    # then
    assert response.status_code == 200
    assert listed(response) == [f"tp_{second.chat_process_id}", f"tp_{first.chat_process_id}"]
    page = response.content.decode()
    assert 'name="viewport"' in page
    assert 'data-api="/api/processes"' in page
    assert "webui/dashboard.js" in page


def test_status_filter_shows_only_processes_in_that_status(alice):
    paused = open_session(alice)
    open_session(alice)
    pause_process(paused.chat_process_id)
    client = logged_in(alice)
    # when
    response = client.get(reverse("webui:processes"), {"status": "PAUSED"})
    # then
    assert listed(response) == [f"tp_{paused.chat_process_id}"]
    assert '<option value="PAUSED" selected>' in response.content.decode()
    assert 'data-status="PAUSED"' in response.content.decode()
    assert listed(client.get(reverse("webui:processes"), {"status": "CLOSED"})) == []
    assert "No processes with status CLOSED." in client.get("/?status=CLOSED").content.decode()


def test_an_unknown_status_filter_is_a_400_naming_the_statuses(alice):
    open_session(alice)
    response = logged_in(alice).get(reverse("webui:processes"), {"status": "SLEEPING"})
    assert response.status_code == 400
    assert listed(response) == []
    assert "status must be one of INIT, RUNNING, IDLE" in response.content.decode()


def test_process_page_shows_the_conversation_and_the_task_tree(alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    send_chat(session.pk, "hello dashboard")
    wait_until(lambda: ConversationMessage.objects.filter(process_id=chat_id).count() >= 2)
    ThinkProcess.objects.filter(pk=chat_id).update(
        engine_state={"taskTree": {"id": "root", "title": "plan the trip", "children": []}}
    )
    # when
    response = logged_in(alice).get(reverse("webui:process", args=[f"tp_{chat_id}"]))
    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert "hello dashboard" in page
    assert "echo: hello dashboard" in page
    assert "&quot;title&quot;: &quot;plan the trip&quot;" in page
    assert f'href="/interactive/?process=tp_{chat_id}"' in page
    assert f'data-api="/api/runs?process=tp_{chat_id}"' in page
    assert 'data-api="/api/inbox"' in page


def test_process_page_without_a_task_tree_says_it_has_none(alice):
    session = open_session(alice)
    response = logged_in(alice).get(
        reverse("webui:process", args=[f"tp_{session.chat_process_id}"])
    )
    assert response.context["task_tree"] is None
    assert "This process has no task tree" in response.content.decode()


@pytest.mark.parametrize("which", ["foreign", "missing", "malformed"])
def test_process_page_of_another_tenant_or_no_process_is_a_404(alice, bob, which):
    foreign = open_session(bob)
    process_id = {
        "foreign": f"tp_{foreign.chat_process_id}",
        "missing": "tp_999999",
        "malformed": "sess_1",
    }[which]
    response = logged_in(alice).get(reverse("webui:process", args=[process_id]))
    assert response.status_code == 404
    assert "bob" not in response.content.decode()


# --- interactive ---------------------------------------------------------------------------------


def test_interactive_page_offers_the_users_projects_and_the_process_to_focus(alice):
    response = logged_in(alice).get(reverse("webui:interactive"), {"process": "tp_7"})
    assert response.status_code == 200
    assert response.context["projects"] == [alice.project_id]
    page = response.content.decode()
    assert 'data-socket="/ws/brain/"' in page
    assert 'data-focus="tp_7"' in page
    assert "webui/interactive.js" in page


def test_interactive_page_shows_inbox_answers_and_workflow_start_as_not_available(alice):
    page = logged_in(alice).get(reverse("webui:interactive")).content.decode()
    assert "<fieldset disabled" in page
    assert "Answer inbox item" in page
    assert "Start a workflow" in page
    assert "does not have yet" in page


@pytest.mark.parametrize("asset", ["webui.css", "dashboard.js", "interactive.js"])
def test_the_ui_assets_are_found_by_the_static_files_finders(asset):
    assert finders.find(f"webui/{asset}")
