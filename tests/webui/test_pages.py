"""The web UI's pages through Django's test client: login, dashboard and interactive page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from inbox.models import InboxItem
from inbox.services import dismiss_item, do_answer, post_item, post_system_item
from processes.actions.create import create_process
from processes.actions.lifecycle import pause_process
from processes.actions.sessions import create_session
from processes.actions.steer import send_chat
from processes.models import ConversationMessage, PendingKind, PendingMessage, ThinkProcess
from sessions_app.models import Session
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until
from triggers.models import Workflow

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


@pytest.mark.parametrize(
    "path", ["/", "/processes/tp_1", "/interactive/", "/inbox/", "/memory/", "/sessions/"]
)
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
    assert '<table class="processes trees" id="process-table"' in page
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
    # the chat's own run is a row of the run logs; no inbox item is posted
    assert 'class="run-row"' in page
    assert "This process posted or asked no inbox items." in page


def test_process_page_hands_its_tree_to_the_drawing_and_lists_its_sub_processes(alice):
    # given: a process with a child
    session = open_session(alice)
    parent = create_process(session, goal="plan", engine="ford", start=False)
    child = create_process(session, goal="trains </script>", engine="ford", parent=parent)
    tree = {"rootId": "n1", "nodes": [{"id": "n1", "parentId": None, "title": "</script>x"}]}
    ThinkProcess.objects.filter(pk=parent.pk).update(engine_state={"taskTree": tree})
    # when
    response = logged_in(alice).get(reverse("webui:process", args=[parent.public_id]))
    # then: the tree goes to the page's script as JSON that cannot end the script early
    page = response.content.decode()
    assert '<script id="task-tree-data" type="application/json">' in page
    assert "\\u003C/script\\u003Ex" in page
    assert 'data-api="/api/processes/' + parent.public_id + '?messages=0"' in page
    assert "webui/tasktree.js" in page
    assert "webui/process.js" in page
    # and the child is listed and linked, its goal escaped
    assert [c["id"] for c in response.context["children"]] == [child.public_id]
    assert f'<a href="/processes/{child.public_id}">{child.public_id}</a>' in page
    assert "trains &lt;/script&gt;" in page


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


def test_interactive_page_links_the_inbox_and_offers_the_users_workflows(alice, bob):
    # given no workflow yet, the page says how to make one
    page = logged_in(alice).get(reverse("webui:interactive")).content.decode()
    assert f'href="{reverse("webui:inbox")}" id="inbox-link"' in page
    assert 'id="workflow-none"' in page
    # when alice has one, and bob another
    mine = Workflow.objects.create(project=alice.project, name="review", body={"inputs": ["topic"]})
    Workflow.objects.create(project=bob.project, name="theirs", body={"inputs": []})
    page = logged_in(alice).get(reverse("webui:interactive")).content.decode()
    # then hers is offered with its inputs, and bob's is not
    assert f'<option value="{mine.public_id}" data-inputs="topic">review ({mine.public_id})' in page
    assert "theirs" not in page
    assert "Start a workflow" in page


# --- inbox ---------------------------------------------------------------------------------------


def origin_of(tenancy: Tenancy) -> ThinkProcess:
    session = open_session(tenancy)
    assert session.chat_process_id is not None
    return ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)


def test_inbox_page_lists_the_users_open_items_with_a_form_for_each_kind(alice, bob):
    origin = origin_of(alice)
    approval = post_item(origin, "APPROVAL", "Deploy to production?", "Tests **pass**.")
    question = post_item(origin, "QUESTION", "Which year?", "", ["2023", "2024"])
    report = post_item(origin, "OUTPUT_TEXT", "Report ready", "Findings…")
    answered = post_item(origin, "APPROVAL", "Old question", "")
    do_answer(alice.user, answered.public_id, {"decision": "approve"})
    bobs = post_item(origin_of(bob), "APPROVAL", "Bob's secret", "")
    # when
    response = logged_in(alice).get(reverse("webui:inbox"))
    # then
    assert response.status_code == 200
    shown = [item["id"] for item in response.context["items"]]
    assert shown == [report.public_id, question.public_id, approval.public_id]
    page = response.content.decode()
    assert bobs.title not in page
    assert answered.title not in page
    assert f'action="/inbox/{approval.public_id}/answer"' in page
    assert 'name="decision" value="approve"' in page
    assert '<option value="2024">2024</option>' in page
    assert f'action="/inbox/{report.public_id}/dismiss"' in page
    assert f'href="/processes/{origin.public_id}"' in page
    assert "Tests <strong>pass</strong>." in page  # the body as Markdown


def test_an_item_a_system_run_posted_links_its_run_on_the_inbox_page(alice):
    # given an approval no process posted: the brain linker's, from its run
    item = post_system_item(
        alice.project, alice.user, "run_4", "APPROVAL", "Contradiction?", "mem_2 vs mem_1"
    )
    # when
    page = logged_in(alice).get(reverse("webui:inbox")).content.decode()
    # then it names its run, linked to the run's page, and no process
    assert item.title in page
    assert 'from <a href="/runs/run_4">run_4</a>' in page
    assert "/processes/None" not in page


def test_approving_on_the_inbox_page_answers_the_item_and_its_process_gets_it(alice):
    origin = origin_of(alice)
    item = post_item(origin, "APPROVAL", "Deploy?", "")
    client = logged_in(alice)
    # when
    response = client.post(
        reverse("webui:inbox-answer", args=[item.public_id]),
        {"decision": "approve", "comment": "go"},
        follow=True,
    )
    # then
    assert response.status_code == 200
    assert f"{item.public_id} answered." in response.content.decode()
    stored = InboxItem.objects.get(pk=item.pk)
    assert (stored.status, stored.answer) == ("ANSWERED", {"decision": "approve", "comment": "go"})
    [pending] = PendingMessage.objects.filter(process=origin, kind=PendingKind.INBOX_ANSWER)
    assert pending.payload["text"] == "approve: go"
    listing = client.get(reverse("webui:inbox"), {"status": "ANSWERED"}).content.decode()
    assert "decision: approve" in listing


def test_a_question_is_answered_with_its_choice_or_in_words_and_a_blank_answer_is_refused(alice):
    origin = origin_of(alice)
    chosen = post_item(origin, "QUESTION", "Which year?", "", ["2023", "2024"])
    worded = post_item(origin, "QUESTION", "Why?", "")
    client = logged_in(alice)
    # when
    client.post(reverse("webui:inbox-answer", args=[chosen.public_id]), {"choice": "2024"})
    refused = client.post(
        reverse("webui:inbox-answer", args=[worded.public_id]), {"text": "  "}, follow=True
    )
    client.post(reverse("webui:inbox-answer", args=[worded.public_id]), {"text": "because"})
    # then
    assert InboxItem.objects.get(pk=chosen.pk).answer == {"choice": "2024"}
    assert "answer.text:" in refused.content.decode()
    assert InboxItem.objects.get(pk=worded.pk).answer == {"text": "because"}


def test_dismissing_on_the_inbox_page_and_a_second_time_says_why_not(alice):
    item = post_item(origin_of(alice), "OUTPUT_TEXT", "Report", "")
    client = logged_in(alice)
    url = reverse("webui:inbox-dismiss", args=[item.public_id])
    assert f"{item.public_id} dismissed." in client.post(url, follow=True).content.decode()
    again = client.post(url, follow=True).content.decode()
    assert "it is DISMISSED" in again


def test_another_users_item_is_a_404_on_the_inbox_page_and_stays_open(alice, bob):
    item = post_item(origin_of(bob), "APPROVAL", "Bob's", "")
    client = logged_in(alice)
    answer = client.post(
        reverse("webui:inbox-answer", args=[item.public_id]), {"decision": "approve"}
    )
    dismiss = client.post(reverse("webui:inbox-dismiss", args=[item.public_id]))
    assert (answer.status_code, dismiss.status_code) == (404, 404)
    assert InboxItem.objects.get(pk=item.pk).status == "OPEN"
    assert client.get(reverse("webui:inbox-answer", args=[item.public_id])).status_code == 405


def test_inbox_page_filters_by_status_and_refuses_an_unknown_one(alice):
    origin = origin_of(alice)
    item = post_item(origin, "OUTPUT_TEXT", "Report", "")
    dismiss_item(alice.user, item.public_id)
    client = logged_in(alice)
    assert client.get(reverse("webui:inbox")).context["items"] == []
    assert "No OPEN items." in client.get(reverse("webui:inbox")).content.decode()
    everything = client.get(reverse("webui:inbox"), {"status": "all"})
    assert [row["id"] for row in everything.context["items"]] == [item.public_id]
    unknown = client.get(reverse("webui:inbox"), {"status": "LOST"})
    assert unknown.status_code == 400
    assert "status: must be one of" in unknown.content.decode()


@pytest.mark.parametrize(
    "asset",
    [
        "webui.css",
        "dashboard.js",
        "interactive.js",
        "memory.js",
        "graphview.js",
        "times.js",
        "speakers.js",
        "spaceoutline.js",
        "memorysearch.js",
    ],
)
def test_the_ui_assets_are_found_by_the_static_files_finders(asset):
    assert finders.find(f"webui/{asset}")


def test_the_memory_page_offers_the_projects_the_edge_types_and_the_scripts(alice, bob):
    # when
    response = logged_in(alice).get("/memory/")
    # then: alice's project only, the four edge types as filters, linked from the navigation
    assert response.status_code == 200
    assert response.context["projects"] == [alice.project_id]
    assert response.context["edge_types"] == ["supports", "contradicts", "derived_from", "mentions"]
    assert response.context["media_types"] == ["text/markdown", "text/plain"]
    page = response.content.decode()
    assert 'href="/memory/" aria-current="page">Memory</a>' in page
    assert page.count('name="type" value=') == 4
    assert "webui/memory.js" in page
    assert "webui/graphview.js" in page
    assert bob.project_id not in page
