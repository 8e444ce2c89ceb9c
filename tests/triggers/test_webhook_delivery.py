"""Inbound deliveries in secret mode through the real REST stack (raw bodies): the right
secret starts a workflow whose task tree holds the URL templated from the payload; every
refusal answers its status, leaves a TriggerEvent with its reason, and runs nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from processes.models import ThinkProcess
from tests.support.marvin import worker
from tests.support.tenancy import Tenancy
from tests.triggers.helpers import create_workflow, finished_run
from tests.triggers.webhook_helpers import create_webhook, deliver, payload
from triggers.models import DeliveryOutcome, RunLog, RunStatus, TriggerEvent
from triggers.tasks import prune_trigger_events_task
from triggers.webhooks import inbound

LINKS: dict[str, Any] = {
    "name": "links",
    "goal": "Read ${input.url}",
    "inputs": ["url"],
    "tasks": [{"kind": "WORKER", "title": "Read", "goal": "summarize ${input.url}"}],
}
SCRIPT = [
    *worker("summarize https://example", "A summary."),
    {"engine": "marvin", "step": "aggregate", "reply": "# Done"},
]


def links_webhook(tenancy: Tenancy, **extra: Any) -> dict[str, Any]:
    workflow_id = create_workflow(tenancy, LINKS)
    action = {
        "type": "run_workflow",
        "workflowId": workflow_id,
        "input": {"url": "${event.page.url}"},
    }
    return create_webhook(tenancy, {"name": "links", "mode": "secret", "action": action, **extra})


def last_event() -> TriggerEvent:
    event = TriggerEvent.objects.order_by("-pk").first()
    assert event is not None
    return event


def nothing_ran() -> bool:
    return (
        not RunLog.objects.exists()
        and not ThinkProcess.objects.filter(think_engine="marvin").exists()
    )


@pytest.mark.django_db(transaction=True)
def test_the_right_secret_starts_the_workflow_with_the_url_templated_from_the_payload(
    alice, script
):
    # given a secret-mode webhook whose action runs a workflow with ${event.page.url}
    script(SCRIPT)
    hook = links_webhook(alice)
    assert hook["secret"]
    assert hook["mode"] == "secret"
    body = payload(page={"url": "https://example.com/a"}, other=[1, 2])
    # when the sender delivers with the secret
    response = deliver(hook["id"], body, **{"X-Webhook-Secret": hook["secret"]})
    # then it is accepted with the run's id
    assert response.status_code == 200, response.json()
    run = finished_run(response.json()["runId"])
    assert run.status == RunStatus.COMPLETED
    assert (run.trigger_type, run.client_type, run.webhook_id) == ("webhook", "webhook", hook["id"])
    assert run.delivery_id.startswith("dlv_")
    # and the run's marvin tree holds the URL of the payload
    process = ThinkProcess.objects.get(pk=run.process_id)
    nodes = process.engine_state["taskTree"]["nodes"]
    assert (nodes[1]["kind"], nodes[1]["goal"]) == ("WORKER", "summarize https://example.com/a")
    assert nodes[1]["status"] == "DONE"
    assert process.session.client_type == "webhook"
    assert process.session.system
    # and the delivery is a TriggerEvent row, accepted
    event = last_event()
    assert (event.status_code, event.outcome, event.run_id) == (200, "accepted", run.pk)
    assert event.body_size == len(body.encode())
    assert event.webhook_id is not None


@pytest.mark.django_db(transaction=True)
def test_an_unknown_id_and_a_wrong_secret_answer_byte_for_byte_alike_and_run_nothing(alice):
    # given a webhook
    hook = links_webhook(alice)
    body = payload(page={"url": "https://example.com/a"})
    # when one delivery names no webhook and another brings a wrong secret
    unknown = deliver("wh_999999", body, **{"X-Webhook-Secret": hook["secret"]})
    wrong = deliver(hook["id"], body, **{"X-Webhook-Secret": "not-the-secret"})
    garbage = deliver("nonsense", body, **{"X-Webhook-Secret": "x"})
    # then all three are the same 401: status, headers and body
    assert unknown.status_code == wrong.status_code == garbage.status_code == 401
    assert unknown.content == wrong.content == garbage.content
    assert sorted(unknown.items()) == sorted(wrong.items()) == sorted(garbage.items())
    # and the webhook's refusal left a TriggerEvent with its reason; those to ids that name no
    # webhook are only counted (unauthenticated requests must not fill the database)
    reasons = list(TriggerEvent.objects.order_by("pk").values_list("webhook_ref", "reason"))
    assert reasons == [(hook["id"], "wrong secret")]
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_a_missing_secret_is_the_same_401(alice):
    hook = links_webhook(alice)
    response = deliver(hook["id"], payload(page={"url": "u"}))
    assert response.status_code == 401
    assert last_event().reason == "missing x-webhook-secret"
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_a_replayed_webhook_id_answers_the_first_run_and_runs_nothing(alice, script):
    # given an accepted delivery with a webhook-id
    script(SCRIPT)
    hook = links_webhook(alice)
    body = payload(page={"url": "https://example.com/b"})
    headers = {"X-Webhook-Secret": hook["secret"], "webhook-id": "msg_1"}
    first = deliver(hook["id"], body, **headers)
    assert first.status_code == 200
    finished_run(first.json()["runId"])
    # when the same id comes again
    again = deliver(hook["id"], body, **headers)
    # then it answers the first run's id and nothing more ran
    assert again.status_code == 200
    assert again.json() == {"runId": first.json()["runId"], "replayed": True}
    assert RunLog.objects.count() == 1
    assert ThinkProcess.objects.filter(think_engine="marvin").count() == 1
    event = last_event()
    assert (event.outcome, event.delivery_id) == (DeliveryOutcome.REPLAYED, "msg_1")
    assert "seen before" in event.reason


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("shift", [timedelta(minutes=-6), timedelta(minutes=6)])
def test_a_stale_or_future_timestamp_is_a_400_and_runs_nothing(alice, shift):
    hook = links_webhook(alice)
    stamp = str(int((datetime.now(tz=UTC) + shift).timestamp()))
    response = deliver(
        hook["id"],
        payload(page={"url": "u"}),
        **{"X-Webhook-Secret": hook["secret"], "webhook-timestamp": stamp},
    )
    assert response.status_code == 400
    assert last_event().reason.startswith("webhook-timestamp: ")
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_an_oversized_body_is_a_413_before_it_is_read_and_runs_nothing(alice, settings):
    # given a cap of 1 KiB
    settings.VANCETOPE_WEBHOOK_MAX_BYTES = 1024
    hook = links_webhook(alice)
    body = payload(page={"url": "u"}, padding="x" * 2000)
    # when a body over it comes, even with the right secret
    response = deliver(hook["id"], body, **{"X-Webhook-Secret": hook["secret"]})
    # then it is refused, recorded with its size, and nothing ran
    assert response.status_code == 413
    event = last_event()
    assert (event.outcome, event.body_size) == ("refused", len(body))
    assert event.reason == "body over 1024 bytes"
    assert event.body_excerpt == ""
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_a_body_that_is_not_json_is_a_400_after_verification(alice):
    hook = links_webhook(alice)
    response = deliver(hook["id"], b"{not json", **{"X-Webhook-Secret": hook["secret"]})
    assert response.status_code == 400
    assert "the body is not JSON" in last_event().reason
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_a_filter_that_does_not_match_is_a_202_and_runs_nothing(alice):
    hook = links_webhook(alice, filter={"action": "opened"})
    response = deliver(
        hook["id"],
        payload(action="closed", page={"url": "u"}),
        **{"X-Webhook-Secret": hook["secret"]},
    )
    assert response.status_code == 202
    assert response.json() == {"filtered": True}
    assert last_event().outcome == "filtered"
    assert "action is 'closed', not 'opened'" in last_event().reason
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_a_payload_without_the_templated_path_is_a_400_naming_it(alice):
    hook = links_webhook(alice)
    response = deliver(hook["id"], payload(page={}), **{"X-Webhook-Secret": hook["secret"]})
    assert response.status_code == 400
    assert response.json()["message"].startswith("${event.page.url}: ")
    assert last_event().reason.startswith("${event.page.url}")
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_refusals_are_recorded_up_to_a_limit_per_webhook_and_only_counted_past_it(alice, settings):
    # given a limit of three recorded refusals a minute per webhook
    settings.VANCETOPE_RATE_WEBHOOK_REFUSALS = "3/minute"
    hook = links_webhook(alice)
    unblock = {"type": "unblock_tasks", "match": {"blockedByExternal": "x:${event.k}"}}
    other = create_webhook(alice, {"name": "other", "mode": "secret", "action": unblock})
    body = payload(page={"url": "u"})
    before = inbound.unstored.over_limit
    # when ten wrong secrets come for one webhook and one for the other
    answers = [
        deliver(hook["id"], body, **{"X-Webhook-Secret": "nope"}).status_code for _ in range(10)
    ]
    deliver(other["id"], body, **{"X-Webhook-Secret": "nope"})
    # then every answer is the same 401; three rows for the first, one for the other
    assert answers == [401] * 10
    rows = list(TriggerEvent.objects.values_list("webhook_ref", flat=True))
    assert sorted(rows) == sorted([hook["id"]] * 3 + [other["id"]])
    assert inbound.unstored.over_limit - before == 7
    assert nothing_ran()


@pytest.mark.django_db(transaction=True)
def test_trigger_events_past_their_retention_are_pruned(alice, settings):
    # given a refusal recorded 31 days ago and one today
    settings.VANCETOPE_TRIGGER_EVENT_RETENTION_DAYS = 30
    hook = links_webhook(alice)
    deliver(hook["id"], payload(page={"url": "u"}))
    deliver(hook["id"], payload(page={"url": "u"}))
    old, new = TriggerEvent.objects.order_by("pk")
    TriggerEvent.objects.filter(pk=old.pk).update(received_at=timezone.now() - timedelta(days=31))
    # when the hourly task runs
    pruned = prune_trigger_events_task()
    # then the old one is gone, the new one kept
    assert pruned == 1
    assert list(TriggerEvent.objects.values_list("pk", flat=True)) == [new.pk]
