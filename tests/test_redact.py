"""Credentials in a URL (an llm.baseUrl's `user:pass@`) are never shown or logged: not to a
member reading the settings, not in a process's lastError, not in a log line or its traceback,
not in a failed span's status (vancetope/redact.py)."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest

from processes.actions import steer
from processes.models import ThinkProcess
from processes.states import Status
from tests.support.roles import MEMBER, caller
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until
from vancetope.observability import tracing
from vancetope.observability.logs import RedactFilter
from vancetope.redact import redact

URL = "https://gateway-user:hunter2@llm.internal:8443/v1"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (URL, "https://***@llm.internal:8443/v1"),
        (f"POST {URL}/chat failed", "POST https://***@llm.internal:8443/v1/chat failed"),
        ("http://token@host/x and ftp://a:b@c/", "http://***@host/x and ftp://***@c/"),
        ("mail me at someone@example.org", "mail me at someone@example.org"),
        ("https://llm.internal/v1", "https://llm.internal/v1"),
    ],
)
def test_the_userinfo_of_every_url_is_replaced(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_a_log_line_and_its_traceback_show_no_credentials() -> None:
    # given a handler as the Brain's console is configured (the redact filter on it)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactFilter())
    logger = logging.getLogger("tests.redact")
    logger.addHandler(handler)
    try:
        # when a request's URL is logged, and an error naming it with its traceback
        logger.warning("HTTP Request: POST %s/chat/completions", URL)
        try:
            raise ConnectionError(f"cannot reach {URL}")
        except ConnectionError:
            logger.exception("the call failed")
    finally:
        logger.removeHandler(handler)
    # then neither shows the password or the user, and both show the host
    written = stream.getvalue()
    assert "hunter2" not in written
    assert "gateway-user" not in written
    assert written.count("https://***@llm.internal:8443/v1") == 2


def test_a_failed_spans_status_shows_no_credentials() -> None:
    statuses: list[Any] = []

    class Span:
        def set_attribute(self, name: str, value: Any) -> None:
            pass

        def set_status(self, status: Any) -> None:
            statuses.append(status)

    tracing.fail(Span(), ConnectionError(f"cannot reach {URL}"))
    assert statuses[0].description == "cannot reach https://***@llm.internal:8443/v1"


@pytest.mark.django_db(transaction=True)
def test_a_member_reads_the_base_url_without_its_credentials(alice: Tenancy, bob: Tenancy) -> None:
    # given an llm.baseUrl with credentials, set by alice (the tenant's admin) on her project
    body = {"scope": "project", "scopeId": alice.project_id, "value": URL}
    assert alice.api().put("/api/settings/llm.baseUrl", body, format="json").status_code == 200
    # when a plain member of the project lists its settings
    member = caller(MEMBER, alice, bob)
    answer = member.api.get(f"/api/settings?scope=project&scopeId={alice.project_id}&limit=500")
    # then the value names the host, not the user or the password (before: all of it)
    assert answer.status_code == 200
    [row] = [row for row in answer.json()["results"] if row["key"] == "llm.baseUrl"]
    assert row["value"] == "https://***@llm.internal:8443/v1"
    assert "hunter2" not in answer.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_provider_error_that_names_the_url_is_a_last_error_without_its_credentials(
    alice: Tenancy, script, settings
) -> None:
    # given a provider whose every call fails with an error naming its URL
    settings.VANCETOPE_TURN_RETRY_SECONDS = 0.001
    script([{"error": f"POST {URL}/chat/completions: connection refused"}])
    session = open_session(alice)
    assert session.chat_process_id is not None
    # when a message is sent and every try fails
    steer.send_chat(session.pk, "hello")
    chat_id = session.chat_process_id
    blocked = wait_until(
        lambda: ThinkProcess.objects.filter(pk=chat_id, status=Status.BLOCKED).first(), timeout=30
    )
    assert blocked is not None
    # then the process waits with the error, which names the host and not the credentials
    assert "https://***@llm.internal:8443/v1/chat/completions" in blocked.last_error
    assert "hunter2" not in ThinkProcess.objects.get(pk=blocked.pk).last_error
    shown = alice.api().get(f"/api/processes/tp_{blocked.pk}").json()
    assert "hunter2" not in str(shown)
