"""The admin's process page: read-only, with its lifecycle calls as buttons on it; verbose names
and inline rows without their objects' names; API tokens issued in the admin, shown once."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from processes.actions.create import create_process
from processes.actions.lifecycle import stop_process
from processes.models import Compaction, ThinkProcess
from processes.states import Status
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.tenancy.models import ApiToken, hash_token

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_admin_index_names_think_processes_api_tokens_and_mcp_servers(operator):
    page = operator.get(reverse("admin:index")).content.decode()
    for name in ("Think processes", "API tokens", "MCP servers"):
        assert f">{name}</a>" in page
    assert "processs" not in page
    assert "Api tokens" not in page
    assert "Mcp servers" not in page


def test_the_process_page_is_read_only_and_a_post_changes_nothing(operator, alice):
    session = open_session(alice)
    chat = session.chat_process_id
    wait_until(lambda: ThinkProcess.objects.get(pk=chat).status == Status.IDLE)
    url = reverse("admin:processes_thinkprocess_change", args=[chat])
    page = operator.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    # no input for the goal, the engine params or the epoch; no save button
    for field in ("goal", "engine_params", "conversation_epoch"):
        assert f'name="{field}"' not in html
    assert 'name="_save"' not in html
    before = ThinkProcess.objects.get(pk=chat)
    # when
    response = operator.post(url, {"goal": "rewritten", "engine_params": "{}"})
    # then
    assert response.status_code == 403
    after = ThinkProcess.objects.get(pk=chat)
    assert (after.goal, after.engine_params, after.updated_at) == (
        before.goal,
        before.engine_params,
        before.updated_at,
    )


def test_the_process_page_offers_the_calls_its_status_allows_as_buttons(operator, alice):
    process = create_process(open_session(alice), recipe="ford", start=False)
    url = reverse("admin:processes_thinkprocess_change", args=[process.pk])
    page = operator.get(url)
    assert page.context["lifecycle_calls"] == ["start", "stop"]
    start_url = reverse("admin:processes_thinkprocess_call", args=[process.pk, "start"])
    assert f'action="{start_url}"' in page.content.decode()
    # when: Start is pressed
    response = operator.post(start_url, follow=True)
    # then: started through the lifecycle service, back on the page with a message
    assert response.redirect_chain[-1] == (url, 302)
    assert ThinkProcess.objects.get(pk=process.pk).status != Status.INIT
    shown = [str(message) for message in response.context["messages"]]
    assert shown[0].startswith(f"{process.public_id}: start → ")


def test_a_button_the_status_forbids_warns_with_the_409_and_changes_nothing(operator, alice):
    process = create_process(open_session(alice), recipe="ford", start=False)
    stop_process(process.pk)
    page = operator.get(reverse("admin:processes_thinkprocess_change", args=[process.pk]))
    assert page.context["lifecycle_calls"] == ["reset"]
    # when: pause, which CLOSED forbids, is posted anyway
    url = reverse("admin:processes_thinkprocess_call", args=[process.pk, "pause"])
    response = operator.post(url, follow=True)
    # then
    shown = [str(message) for message in response.context["messages"]]
    assert shown == [
        f"{process.public_id}: 409 cannot pause process {process.public_id}: it is CLOSED/STOPPED"
    ]
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.CLOSED
    assert operator.get(url).status_code == 405


def test_inline_rows_carry_no_object_names(operator, alice):
    session = open_session(alice)
    chat = session.chat_process_id
    wait_until(lambda: ThinkProcess.objects.get(pk=chat).status == Status.IDLE)
    html = operator.get(reverse("admin:processes_thinkprocess_change", args=[chat])).content
    text = html.decode()
    # a status-history row used to be headed "7: INIT -start-> IDLE"
    assert "-start-&gt;" not in text
    assert "-start->" not in text
    assert 'class="original"' in text  # the inline table is still drawn


def test_an_api_token_is_created_in_the_admin_and_shown_once(operator, alice):
    add = reverse("admin:tenancy_apitoken_add")
    form = operator.get(add)
    assert form.status_code == 200
    assert list(form.context["adminform"].form.fields) == ["user", "name"]
    # when
    response = operator.post(add, {"user": alice.user.pk, "name": "laptop"})
    # then: the raw token is on this page, and only its hash is stored
    assert response.status_code == 200
    raw = response.context["raw"]
    assert raw.startswith("vt_")
    assert raw in response.content.decode()
    assert "shown only this once" in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get(name="laptop")
    assert (token.user_id, token.key_hash, token.prefix) == (
        alice.user.pk,
        hash_token(raw),
        raw[:10],
    )
    # and it works
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/processes").status_code == 200
    # and the token's own page never shows it again
    change = operator.get(reverse("admin:tenancy_apitoken_change", args=[token.pk]))
    assert raw not in change.content.decode()


def test_the_process_page_shows_the_conversations_compactions_undone_ones_too(operator, alice):
    # given a chat whose conversation was folded twice, the second fold undone
    session = open_session(alice)
    chat = session.chat_process_id
    wait_until(lambda: ThinkProcess.objects.get(pk=chat).status == Status.IDLE)
    Compaction.objects.create(
        process_id=chat, first_index=0, last_index=9, messages=10, turns=5,
        summary="They spoke of PELICAN-42.", method="llm",
    )  # fmt: skip
    Compaction.objects.create(
        process_id=chat, first_index=10, last_index=19, messages=20, turns=5,
        summary="Then of rivers.", method="fallback", undone_at=timezone.now(),
    )  # fmt: skip
    # when the operator opens the process page
    html = operator.get(reverse("admin:processes_thinkprocess_change", args=[chat])).content
    # then both folds are there, read-only, with their summaries and methods
    page = html.decode()
    assert "Compactions" in page
    assert "They spoke of PELICAN-42." in page
    assert "Then of rivers." in page
    assert "fallback" in page
    assert 'name="compactions-0-summary"' not in page
