"""The process page's lifecycle buttons: Start, Pause, Resume, Reset, Stop where allowed."""

from __future__ import annotations

import pytest
from django.test import Client

from processes.actions.create import create_process
from processes.actions.lifecycle import stop_process
from processes.models import ThinkProcess
from processes.states import Status
from tests.support.tenancy import Tenancy, open_session

pytestmark = pytest.mark.django_db(transaction=True)


def logged_in(tenancy: Tenancy) -> Client:
    client = Client()
    client.force_login(tenancy.user)
    return client


def test_an_init_process_has_a_start_button_that_starts_it(alice):
    process = create_process(open_session(alice, "web"), recipe="ford", start=False)
    client = logged_in(alice)
    page = client.get(f"/processes/{process.public_id}")
    assert page.context["calls"] == ["start", "stop"]
    assert f'action="/processes/{process.public_id}/start"' in page.content.decode()
    # when
    response = client.post(f"/processes/{process.public_id}/start", follow=True)
    # then
    assert response.redirect_chain == [(f"/processes/{process.public_id}", 302)]
    assert ThinkProcess.objects.get(pk=process.pk).status != Status.INIT
    assert f"{process.public_id}: start →" in response.content.decode()


def test_a_stopped_process_has_a_reset_button_that_puts_it_back_to_init(alice):
    process = create_process(open_session(alice, "web"), recipe="ford", start=False)
    stop_process(process.pk)
    client = logged_in(alice)
    assert client.get(f"/processes/{process.public_id}").context["calls"] == ["reset"]
    # when
    client.post(f"/processes/{process.public_id}/reset")
    # then
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.INIT


def test_a_call_the_status_forbids_is_shown_and_changes_nothing(alice):
    process = create_process(open_session(alice, "web"), recipe="ford", start=False)
    # when: reset on INIT
    response = logged_in(alice).post(f"/processes/{process.public_id}/reset", follow=True)
    # then
    assert f"cannot reset process {process.public_id}: it is INIT" in response.content.decode()
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.INIT


def test_another_users_process_and_an_unknown_call_are_404(alice, bob):
    process = create_process(open_session(bob, "web"), recipe="ford", start=False)
    client = logged_in(alice)
    assert client.post(f"/processes/{process.public_id}/start").status_code == 404
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.INIT
    own = create_process(open_session(alice, "web"), recipe="ford", start=False)
    assert client.post(f"/processes/{own.public_id}/explode").status_code == 404
    assert client.get(f"/processes/{own.public_id}/start").status_code == 405
