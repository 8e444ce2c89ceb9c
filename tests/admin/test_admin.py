"""The Django admin: changelists and filters, process inlines, lifecycle actions, recipe form."""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.contrib import messages
from django.test import Client
from django.urls import reverse

from engines.registry import all_engines
from processes.actions.create import create_process
from processes.actions.lifecycle import pause_process, suspend_process
from processes.actions.sessions import resume_session, suspend_session
from processes.actions.steer import steer_process
from processes.models import ThinkProcess
from processes.session_admin import SessionAdmin
from processes.states import Status
from recipes_app.models import Recipe, RecipeCategory, RecipeScope
from recipes_app.services import read_bundled_recipes
from sessions_app.events import emit_event, record_events
from sessions_app.models import Session, SessionEvent, SuspendCause
from sessions_app.services import FingerprintData
from tests.support.admin import recipe_form
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# The bundled recipes (recipes.yaml) are in every recipe changelist beside the test's own.
BUNDLED = read_bundled_recipes()
BUNDLED_SERVICE = sum(1 for entry in BUNDLED if entry.get("category") == "service")


@pytest.fixture
def world(alice: Tenancy) -> dict[str, Any]:
    """Two sessions (one a system session), a service process and a process not yet started."""
    Recipe.objects.create(
        name="sweeper",
        engine="ford",
        category=RecipeCategory.SERVICE,
        scope=RecipeScope.PROJECT,
        project=alice.project,
        tenant=alice.tenant,
    )
    person = open_session(alice)
    cron = open_session(alice, "cron", system=True)
    service = create_process(cron, goal="sweep", recipe="sweeper")
    waiting = create_process(person, goal="later", engine="ford", start=False)
    # The service's goal runs in a turn of its own: counted IDLE once that turn has run.
    wait_until(
        lambda: ThinkProcess.objects.filter(
            pk=service.pk, status=Status.IDLE, consumed_count__gte=1
        ).exists()
    )
    return {"person": person, "cron": cron, "service": service, "waiting": waiting}


def change_form_data(response: Any) -> dict[str, Any]:
    """The POST body the admin change page would send back unchanged."""
    form = response.context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(field, forms.BooleanField):
            if value:
                data[name] = "on"
        elif value is not None:
            data[name] = value
    for inline in response.context["inline_admin_formsets"]:
        prefix = inline.formset.prefix
        data |= {
            f"{prefix}-TOTAL_FORMS": "0",
            f"{prefix}-INITIAL_FORMS": "0",
            f"{prefix}-MIN_NUM_FORMS": "0",
            f"{prefix}-MAX_NUM_FORMS": "1000",
        }
    return data


def run_action(operator: Client, action: str, *processes: ThinkProcess) -> list[Any]:
    response = operator.post(
        reverse("admin:processes_thinkprocess_changelist"),
        {"action": action, "_selected_action": [p.pk for p in processes]},
        follow=True,
    )
    assert response.status_code == 200
    return list(response.context["messages"])


# --- changelists ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url_name", "query", "expected_count"),
    [
        ("admin:processes_thinkprocess_changelist", {}, 4),
        ("admin:processes_thinkprocess_changelist", {"status__exact": "IDLE"}, 3),
        ("admin:processes_thinkprocess_changelist", {"status__exact": "INIT"}, 1),
        ("admin:processes_thinkprocess_changelist", {"category": "service"}, 1),
        ("admin:processes_thinkprocess_changelist", {"category": "user"}, 3),
        ("admin:processes_thinkprocess_changelist", {"session__system__exact": "1"}, 2),
        ("admin:processes_thinkprocess_changelist", {"q": "sweep"}, 1),
        ("admin:brain_sessions_session_changelist", {}, 2),
        ("admin:brain_sessions_session_changelist", {"system__exact": "1"}, 1),
        ("admin:brain_sessions_session_changelist", {"client_type__exact": "cli"}, 1),
        ("admin:brain_sessions_session_changelist", {"status__exact": "CLOSED"}, 0),
        ("admin:recipes_recipe_changelist", {}, len(BUNDLED) + 1),
        ("admin:recipes_recipe_changelist", {"scope__exact": "bundled"}, len(BUNDLED)),
        ("admin:recipes_recipe_changelist", {"category__exact": "service"}, BUNDLED_SERVICE + 1),
        ("admin:tenancy_tenant_changelist", {}, 1),
        ("admin:tenancy_project_changelist", {}, 1),
        ("admin:tenancy_apitoken_changelist", {}, 1),
        ("admin:tenancy_apitoken_changelist", {"revoked_at__isnull": "True"}, 1),
    ],
)
def test_changelist_opens_and_filters(operator, world, url_name, query, expected_count):
    # when
    response = operator.get(reverse(url_name), query)
    # then
    assert response.status_code == 200
    assert response.context["cl"].result_count == expected_count


def test_changelists_are_closed_to_people_who_are_not_staff(alice):
    client = Client()
    client.force_login(alice.user)
    response = client.get(reverse("admin:processes_thinkprocess_changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize(
    "url_name",
    [
        "admin:tenancy_tenant_change",
        "admin:tenancy_project_change",
    ],
)
def test_tenant_and_project_pages_open_with_their_member_inlines(operator, alice, url_name):
    obj = alice.tenant if "tenant" in url_name else alice.project
    response = operator.get(reverse(url_name, args=[obj.pk]))
    assert response.status_code == 200
    assert "user-alice" in response.content.decode()


def test_token_page_never_shows_the_hash(operator, alice):
    token = alice.user.api_tokens.get()
    # when
    response = operator.get(reverse("admin:tenancy_apitoken_change", args=[token.pk]))
    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert token.prefix in page
    assert token.key_hash not in page


# --- the process page ----------------------------------------------------------------------------


def test_process_page_shows_pending_messages_and_transitions(operator, alice):
    # given a paused chat process with a message waiting
    session = open_session(alice)
    chat_id = session.chat_process_id
    pause_process(chat_id)
    steer_process(chat_id, "remember the milk")
    # when
    response = operator.get(reverse("admin:processes_thinkprocess_change", args=[chat_id]))
    # then
    assert response.status_code == 200
    inlines = {
        inline.formset.model.__name__: inline.formset
        for inline in response.context["inline_admin_formsets"]
    }
    assert {"PendingMessage", "ProcessTransition", "ConversationMessage"} <= set(inlines)
    pending = [form.instance for form in inlines["PendingMessage"].forms]
    assert [(m.seq, m.text, m.consumed) for m in pending] == [(1, "remember the milk", False)]
    transitions = [form.instance for form in inlines["ProcessTransition"].forms]
    assert [(t.call, t.from_status, t.to_status) for t in transitions] == [
        ("start", "INIT", "IDLE"),
        ("pause", "IDLE", "PAUSED"),
    ]
    assert "remember the milk" in response.content.decode()


def test_processes_cannot_be_added_by_hand(operator, alice):
    response = operator.get(reverse("admin:processes_thinkprocess_add"))
    assert response.status_code == 403
    changelist = operator.get(reverse("admin:processes_thinkprocess_changelist"))
    assert changelist.context["has_add_permission"] is False


# --- lifecycle actions ---------------------------------------------------------------------------


def test_resume_action_resumes_a_suspended_process(operator, alice):
    session = open_session(alice)
    process = suspend_process(session.chat_process_id)
    assert process.status == Status.SUSPENDED
    # when
    shown = run_action(operator, "resume_processes", process)
    # then
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.IDLE
    assert [(m.level, m.message) for m in shown] == [
        (messages.SUCCESS, f"{process.public_id}: resume → IDLE")
    ]


def test_resume_action_on_an_idle_process_warns_with_the_409_and_changes_nothing(operator, alice):
    session = open_session(alice)
    process = ThinkProcess.objects.get(pk=session.chat_process_id)
    # when
    shown = run_action(operator, "resume_processes", process)
    # then
    after = ThinkProcess.objects.get(pk=process.pk)
    assert (after.status, after.updated_at) == (Status.IDLE, process.updated_at)
    assert [(m.level, m.message) for m in shown] == [
        (
            messages.WARNING,
            f"{process.public_id}: 409 cannot resume process {process.public_id}: it is IDLE",
        )
    ]


def test_an_action_on_several_processes_reports_each(operator, alice):
    first = open_session(alice)
    second = open_session(alice)
    paused = pause_process(first.chat_process_id)
    idle = ThinkProcess.objects.get(pk=second.chat_process_id)
    # when
    shown = run_action(operator, "stop_processes", paused, idle)
    # then
    assert sorted(m.level for m in shown) == [messages.SUCCESS, messages.SUCCESS]
    stopped = ThinkProcess.objects.filter(pk__in=[paused.pk, idle.pk])
    assert {(p.status, p.close_reason) for p in stopped} == {("CLOSED", "STOPPED")}


# --- sessions ------------------------------------------------------------------------------------


def test_session_page_shows_its_processes_and_events(operator, alice):
    session = open_session(alice)
    emit_event(session.pk, "notification", {"text": "hello operator", "level": "info"})
    # when
    response = operator.get(reverse("admin:brain_sessions_session_change", args=[session.pk]))
    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert "hello operator" in page
    assert reverse("admin:processes_thinkprocess_change", args=[session.chat_process_id]) in page


def test_session_page_shows_its_status_history(operator, alice):
    # given a session that was suspended by its client's disconnect and resumed
    session = open_session(alice)
    suspend_session(session.pk, SuspendCause.DISCONNECT)
    resume_session(
        alice.user, session.pk, FingerprintData(machine_id="m-1", working_dir="/work"), None
    )
    # when
    response = operator.get(reverse("admin:brain_sessions_session_change", args=[session.pk]))
    # then both changes are listed with their cause
    page = response.content.decode()
    assert "status history" in page.lower()
    assert page.count("SUSPENDED") >= 2  # the suspend's to-status and the resume's from-status
    assert "DISCONNECT" in page


def test_sessions_cannot_be_added_by_hand(operator, alice):
    assert operator.get(reverse("admin:brain_sessions_session_add")).status_code == 403


def test_editing_a_session_keeps_its_status_and_its_event_numbering(operator, alice, monkeypatch):
    # given: the session emits an event while the operator's save is being processed
    session = open_session(alice)
    url = reverse("admin:brain_sessions_session_change", args=[session.pk])
    data = change_form_data(operator.get(url))
    original_save_form = SessionAdmin.save_form

    def save_form_while_an_event_is_emitted(self, request, form, change):
        record_events(session.pk, [("chat-delta", {"text": "…"})])
        return original_save_form(self, request, form, change)

    monkeypatch.setattr(SessionAdmin, "save_form", save_form_while_an_event_is_emitted)
    # when
    response = operator.post(
        url, {**data, "idle_timeout": "60", "status": "CLOSED", "binding": "7"}
    )
    # then
    assert response.status_code == 302
    after = Session.objects.get(pk=session.pk)
    assert (after.idle_timeout, after.status) == (60, "OPEN")
    # (its client's bind is the sockets' to count, not the operator's to edit)
    assert after.binding == session.binding
    newest = SessionEvent.objects.filter(session=session).order_by("-seq").first()
    assert after.last_seq == newest.seq
    # and the next event gets the next number
    seq, _ = emit_event(session.pk, "notification", {"text": "next"})
    assert seq == newest.seq + 1


# --- recipes -------------------------------------------------------------------------------------


def test_recipe_form_refuses_an_unknown_engine(operator, alice):
    # when
    response = operator.post(
        reverse("admin:recipes_recipe_add"), recipe_form(alice, engine="no-such-engine")
    )
    # then
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    # (every registered engine is named, in order; the built-in ones at least)
    registered = sorted(engine.name for engine in all_engines())
    assert {"agrajag", "arthur", "ford", "frankie", "marvin", "vogon", "zaphod"} <= set(registered)
    assert errors["engine"] == [
        f"unknown think engine 'no-such-engine'; registered: {', '.join(registered)}"
    ]
    assert not Recipe.objects.filter(name="ford-coding").exists()


def test_recipe_form_creates_a_recipe_of_a_registered_engine(operator, alice):
    response = operator.post(reverse("admin:recipes_recipe_add"), recipe_form(alice))
    assert response.status_code == 302
    recipe = Recipe.objects.get(name="ford-coding")
    assert (recipe.scope, recipe.project, recipe.params) == (
        RecipeScope.PROJECT,
        alice.project,
        {"temperature": 0.2},
    )


def test_recipe_form_refuses_the_bundled_scope(operator, alice):
    response = operator.post(
        reverse("admin:recipes_recipe_add"),
        recipe_form(alice, scope="bundled", tenant="", project=""),
    )
    assert response.status_code == 200
    assert "recipes.yaml" in response.context["adminform"].form.errors["scope"][0]
    assert not Recipe.objects.filter(name="ford-coding").exists()


def test_recipe_form_refuses_a_scope_without_its_owner(operator, alice):
    response = operator.post(
        reverse("admin:recipes_recipe_add"), recipe_form(alice, scope="tenant", tenant="")
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert not Recipe.objects.filter(name="ford-coding").exists()


def test_bundled_recipes_are_shown_read_only(operator, alice):
    ford = Recipe.objects.get(name="ford", scope=RecipeScope.BUNDLED)
    url = reverse("admin:recipes_recipe_change", args=[ford.pk])
    # when
    page = operator.get(url)
    edit = operator.post(url, recipe_form(alice, name="ford", title="hacked"))
    delete = operator.post(reverse("admin:recipes_recipe_delete", args=[ford.pk]), {"post": "yes"})
    # then
    assert page.status_code == 200
    assert page.context["has_change_permission"] is False
    assert edit.status_code == 403
    assert delete.status_code == 403
    after = Recipe.objects.get(pk=ford.pk)
    assert after.title == ford.title
