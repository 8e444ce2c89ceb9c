"""Rate limits over REST and the logins: a steer past the user's limit is a 429 with
Retry-After and is not queued; wrong API tokens from one address are throttled; failed admin
and web logins lock the username out from that address (django-axes)."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from processes.actions.lifecycle import pause_process
from processes.actions.steer import steer_as
from processes.models import PendingMessage
from tests.support.tenancy import open_session

pytestmark = pytest.mark.django_db(transaction=True)


def queued(process_id: int) -> list[str]:
    rows = PendingMessage.objects.filter(process_id=process_id).order_by("seq")
    return [row.payload["text"] for row in rows]


def test_rest_steers_past_the_limit_are_429_with_retry_after(alice, settings):
    settings.VANCETOPE_RATE_CHAT = "2/minute"
    session = open_session(alice)
    pause_process(session.chat_process_id)
    api = alice.api()
    url = f"/api/processes/tp_{session.chat_process_id}/steer"
    # when
    answers = [api.post(url, {"message": f"m{n}"}, format="json") for n in range(4)]
    # then
    assert [answer.status_code for answer in answers] == [200, 200, 429, 429]
    refused = answers[2]
    assert refused.json()["error"] == "rate-limited"
    assert "too many chat and steer messages (limit 2/minute)" in refused.json()["message"]
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert queued(session.chat_process_id) == ["m0", "m1"]


def test_the_default_limit_takes_a_burst_of_120_steers_and_refuses_the_rest(alice):
    # given the default VANCETOPE_RATE_CHAT (120/10 seconds)
    session = open_session(alice)
    pause_process(session.chat_process_id)
    texts = [f"m{n}" for n in range(150)]
    # when one burst of 150 steers comes in
    steered, refused = steer_as(alice.user, session.chat_process_id, texts)
    # then
    assert len(steered) == 120
    assert refused is not None
    assert refused.code == 429
    assert queued(session.chat_process_id) == texts[:120]


def test_wrong_api_tokens_past_the_limit_are_429_for_that_token_from_that_address_only(
    alice, settings
):
    settings.VANCETOPE_RATE_TOKEN_FAILURES = "5/minute"
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer vt_not-a-token")
    # when
    answers = [wrong.get("/api/recipes").status_code for _ in range(7)]
    wrong_from_elsewhere = wrong.get("/api/recipes", REMOTE_ADDR="127.0.0.2")
    right_from_there = alice.api().get("/api/recipes")
    # then
    assert answers == [401] * 5 + [429] * 2
    refused = wrong.get("/api/recipes")
    assert refused.json()["error"] == "rate-limited"
    assert "too many wrong API tokens" in refused.json()["message"]
    assert int(refused["Retry-After"]) >= 1
    assert wrong_from_elsewhere.status_code == 401
    # and a valid token from the same address is never refused for another client's failures
    assert right_from_there.status_code == 200


def test_the_default_limit_allows_exactly_twenty_wrong_tokens(alice, settings):
    # given the default limit, 20 a minute
    assert settings.VANCETOPE_RATE_TOKEN_FAILURES == "20/minute"
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer vt_wrongwrongwrong")
    # when
    answers = [wrong.get("/api/recipes").status_code for _ in range(22)]
    # then twenty are answered 401, the next ones 429, on either runtime
    assert answers == [401] * 20 + [429] * 2


def test_behind_a_trusted_proxy_clients_are_counted_by_their_forwarded_address(alice, settings):
    # given a proxy the operator trusts, and two clients behind it
    settings.VANCETOPE_RATE_TOKEN_FAILURES = "3/minute"
    settings.VANCETOPE_TRUSTED_PROXIES = ["10.0.0.0/8"]
    proxy = {"REMOTE_ADDR": "10.1.2.3"}
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer vt_not-a-token")
    # when the first client fails past the limit (with a spoofed hop to its left)
    first = [
        wrong.get("/api/recipes", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.7", **proxy).status_code
        for _ in range(4)
    ]
    # then it is refused, while the other client behind the proxy is not
    second = wrong.get("/api/recipes", HTTP_X_FORWARDED_FOR="198.51.100.8", **proxy)
    assert first == [401] * 3 + [429]
    assert second.status_code == 401
    # and without a trusted proxy the header is not believed: the peer address counts
    settings.VANCETOPE_TRUSTED_PROXIES = []
    spoofed = [
        wrong.get("/api/recipes", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").status_code
        for n in range(4)
    ]
    assert spoofed == [401] * 3 + [429]


def test_wrong_tokens_with_a_valid_tokens_prefix_never_lock_that_token_out(alice, settings):
    # given wrong tokens that reuse the first ten characters of alice's token (the admin's
    # token list shows them), sent past the limit from her address
    settings.VANCETOPE_RATE_TOKEN_FAILURES = "3/minute"
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION=f"Bearer {alice.token[:10]}{'x' * 30}")
    answers = [wrong.get("/api/recipes").status_code for _ in range(5)]
    # then the wrong ones are refused, and her valid token from there still works (before:
    # a 429, counted by address and prefix)
    assert answers == [401] * 3 + [429] * 2
    assert alice.api().get("/api/recipes").status_code == 200


def test_right_tokens_are_never_counted(alice, settings):
    settings.VANCETOPE_RATE_TOKEN_FAILURES = "2/minute"
    api = alice.api()
    assert [api.get("/api/recipes").status_code for _ in range(5)] == [200] * 5


@pytest.mark.parametrize(
    ("login_url", "username_field"),
    [("/admin/login/", "username"), ("/accounts/login/", "username")],
)
def test_failed_logins_lock_the_username_out_from_that_address(
    db, settings, login_url, username_field
):
    settings.AXES_FAILURE_LIMIT = 3
    users = get_user_model()
    users.objects.create_superuser("root", "", "right-password")
    users.objects.create_superuser("other", "", "other-password")
    browser = Client()
    # when: wrong passwords until the limit
    answers = [
        browser.post(login_url, {username_field: "root", "password": f"wrong-{n}"}).status_code
        for n in range(3)
    ]
    locked = browser.post(login_url, {username_field: "root", "password": "right-password"})
    logged_in_while_locked = "_auth_user_id" in browser.session
    another_user = browser.post(login_url, {username_field: "other", "password": "other-password"})
    # then the third failure locks root out, the right password included, with a 429 page
    assert answers == [200, 200, 429]
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert not logged_in_while_locked
    assert AccessAttempt.objects.get(username="root").failures_since_start >= 3
    # and another username from the same address still logs in
    assert another_user.status_code == 302
    assert browser.session["_auth_user_id"] == str(users.objects.get(username="other").pk)
