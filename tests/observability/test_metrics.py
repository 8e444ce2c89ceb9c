"""/metrics (issue 26): prometheus-client's own parser reads the page after a chat, a webhook
refusal and a cron firing, and the counters moved; the page is for staff, or for anyone when
VANCETOPE_METRICS_PUBLIC says so."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from processes.actions import steer
from processes.actions.lifecycle import pause_process
from processes.models import ThinkProcess
from processes.states import Status
from tests.support.observability import sample
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import settled, wait_until
from triggers.webhooks import inbound
from vancetope.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def staff_client() -> APIClient:
    user = get_user_model().objects.create_user("ops", password="pw-ops", is_staff=True)
    _, token = ApiToken.issue(user, name="scraper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def scrape(client: APIClient) -> str:
    answer = client.get("/metrics")
    assert answer.status_code == 200, answer.content
    assert answer["content-type"].startswith("text/plain")
    return answer.content.decode()


def fire_continuation(tenancy: Tenancy) -> dict[str, Any]:
    """A cron job that continues a PAUSED chat process with one message waiting, fired now."""
    session = open_session(tenancy)
    assert session.chat_process_id is not None
    pause_process(session.chat_process_id)
    steer.steer_many(session.chat_process_id, ["tonight's question"])
    body = {
        "name": "nightly",
        "schedule": "0 3 * * *",
        "timezone": "UTC",
        "enabled": True,
        "action": {
            "type": "process_continue",
            "processId": f"tp_{session.chat_process_id}",
            "constraints": {"maxTasks": 1},
        },
    }
    job = tenancy.api().post("/api/cron-jobs", body, format="json").json()
    fired = tenancy.api().post(f"/api/cron-jobs/{job['id']}/run")
    assert fired.status_code == 201, fired.json()
    settled(session.chat_process_id, Status.PAUSED)
    return dict(fired.json()["firing"])


def test_metrics_move_after_a_chat_a_webhook_refusal_and_a_cron_firing(alice, script):
    # given a staff scraper and the page as it is now
    script([{"match": "^hello$", "reply": "Hi."}])
    scraper = staff_client()
    before = scrape(scraper)
    project = alice.project.public_id
    llm = {"provider": "scripted", "model": "scripted", "project": project}
    # when alice chats once
    session = open_session(alice)
    steer.send_chat(session.pk, "hello")
    wait_until(
        lambda: (
            ThinkProcess.objects.get(pk=session.chat_process_id).consumed_count == 1
            and ThinkProcess.objects.get(pk=session.chat_process_id).status == Status.IDLE
        )
    )
    # and a delivery to a webhook id that names none is refused
    refused = inbound.receive("wh_999999", {}, b"{}", 2)
    assert refused.status == 401
    # and a cron job fires
    assert fire_continuation(alice)["outcome"] == "ran"
    after = scrape(scraper)

    engine = ThinkProcess.objects.get(pk=session.chat_process_id).think_engine

    # then the counters moved
    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert moved("vancetope_turns_total", engine=engine, outcome="ok") >= 2
    assert moved("vancetope_turn_duration_seconds_count", engine=engine, outcome="ok") >= 2
    assert moved("vancetope_lane_wake_lag_seconds_count") >= 2
    assert moved("vancetope_llm_calls_total", outcome="ok", **llm) >= 2
    assert moved("vancetope_llm_tokens_total", type="input", **llm) > 0
    assert moved("vancetope_llm_tokens_total", type="output", **llm) > 0
    assert (
        moved("vancetope_webhook_deliveries_total", outcome="refused", reason="unknown_webhook")
        == 1
    )
    assert moved("vancetope_cron_firings_total", outcome="ran") == 1
    assert moved("vancetope_runs_finished_total", trigger="user", status="completed") >= 1
    # and what the database knows is read at the scrape, no process id among the labels
    assert sample(after, "vancetope_processes", status="IDLE") >= 1
    assert sample(after, "vancetope_processes", status="PAUSED") >= 1
    assert sample(after, "vancetope_pending_messages", status="IDLE") == 0
    assert "tp_" not in after


def test_metrics_are_for_staff_unless_made_public(alice, settings):
    # given no token, and alice's, who is not staff
    anonymous = APIClient()
    # when either reads /metrics, it is refused
    assert anonymous.get("/metrics").status_code == 401
    assert alice.api().get("/metrics").status_code == 403
    # and when a setting makes the page public, anyone reads it
    settings.VANCETOPE_METRICS_PUBLIC = True
    assert "vancetope_turns" in scrape(anonymous)
