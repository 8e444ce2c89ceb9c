"""Signature mode (Standard Webhooks v1), the headers made by the standardwebhooks package's
own signer: verified on the raw body; a tampered body, a bad signature or a stale timestamp
runs nothing; a list with one bad and one good signature accepts; rotate-secret keeps the old
secret valid for the grace period only (both modes)."""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime, timedelta

import pytest

from processes.models import ThinkProcess
from tests.triggers.webhook_helpers import create_webhook, deliver, payload, signed_headers
from triggers.models import RunLog, TriggerEvent, Webhook
from triggers.webhooks import secrets as webhook_secrets

UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.build}"}}


def signature_hook(tenancy):
    return create_webhook(tenancy, {"name": "ci", "mode": "signature", "action": UNBLOCK})


def reasons() -> list[tuple[int, str]]:
    return list(TriggerEvent.objects.order_by("pk").values_list("status_code", "reason"))


@pytest.mark.django_db(transaction=True)
def test_a_signed_delivery_is_accepted_and_its_secret_is_stored_encrypted(alice):
    # given a signature-mode webhook: its secret is whsec_ + base64, shown once
    hook = signature_hook(alice)
    secret = hook["secret"]
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    row = Webhook.objects.get(pk=int(hook["id"][3:]))
    assert secret not in row.secret
    assert secret.removeprefix("whsec_") not in row.secret
    assert "secret" not in alice.api().get(f"/api/webhooks/{hook['id']}").json()
    # when a delivery is signed with it (the body with odd spacing, as a sender may send it)
    body = '{"build":  7,   "ok": true}'
    response = deliver(hook["id"], body, **signed_headers(secret, "msg_a", body))
    # then it is accepted, and deduplicated by its webhook-id
    assert response.status_code == 200, response.json()
    run = RunLog.objects.get(pk=int(response.json()["runId"][4:]))
    assert (run.trigger_type, run.webhook_id, run.delivery_id) == ("webhook", hook["id"], "msg_a")
    again = deliver(hook["id"], body, **signed_headers(secret, "msg_a", body))
    assert again.json() == {"runId": run.public_id, "replayed": True}
    assert RunLog.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_tampered_body_a_bad_signature_missing_headers_and_a_stale_timestamp_run_nothing(alice):
    hook = signature_hook(alice)
    secret = hook["secret"]
    body = payload(build=7)
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    stale = datetime.now(tz=UTC) - timedelta(minutes=10)
    cases = [
        (payload(build=8), signed_headers(secret, "m1", body)),  # tampered body
        (body, signed_headers(other, "m2", body)),  # another secret's signature
        (body, {"webhook-id": "m3", "webhook-timestamp": "1"}),  # no signature
        (body, signed_headers(secret, "m4", body, at=stale)),  # stale
    ]
    answers = [deliver(hook["id"], sent, **headers) for sent, headers in cases]
    assert [answer.status_code for answer in answers] == [401, 401, 400, 400]
    assert reasons() == [
        (401, "no valid signature in webhook-signature"),
        (401, "no valid signature in webhook-signature"),
        (400, "webhook-timestamp: too old (more than 5 minutes before now)"),
        (400, "webhook-timestamp: too old (more than 5 minutes before now)"),
    ]
    # the two 401s are the same answer as an unknown id's
    unknown = deliver("wh_424242", body, **signed_headers(secret, "m5", body))
    assert answers[0].content == answers[1].content == unknown.content
    # a missing signature header is a 401 too (a fresh timestamp)
    fresh = signed_headers(secret, "m6", body)
    del fresh["webhook-signature"]
    assert deliver(hook["id"], body, **fresh).status_code == 401
    assert TriggerEvent.objects.order_by("-pk").first().reason == "missing webhook-signature"
    assert not RunLog.objects.exists()
    assert not ThinkProcess.objects.filter(session__client_type="webhook").exists()


@pytest.mark.django_db(transaction=True)
def test_a_signature_list_with_one_bad_and_one_good_entry_accepts(alice):
    hook = signature_hook(alice)
    body = payload(build=9)
    headers = signed_headers(hook["secret"], "m-list", body)
    bad = "v1," + base64.b64encode(secrets.token_bytes(32)).decode()
    headers["webhook-signature"] = f"{bad} {headers['webhook-signature']}"
    response = deliver(hook["id"], body, **headers)
    assert response.status_code == 200, response.json()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", ["signature", "secret"])
def test_rotate_keeps_the_old_secret_valid_in_the_grace_period_only(
    alice, monkeypatch, settings, mode
):
    # given a webhook and a grace period of one hour
    hook = create_webhook(alice, {"name": "r", "mode": mode, "action": UNBLOCK})
    old = hook["secret"]
    settings.VANCETOPE_WEBHOOK_ROTATE_GRACE_SECONDS = 3600.0
    # when its secret is rotated
    rotated = alice.api().post(f"/api/webhooks/{hook['id']}/rotate-secret").json()
    new = rotated["secret"]
    assert new != old
    assert rotated["previousSecretValidUntil"] is not None

    def send(secret: str, msg_id: str) -> int:
        body = payload(build=msg_id)
        if mode == "signature":
            return deliver(hook["id"], body, **signed_headers(secret, msg_id, body)).status_code
        return deliver(hook["id"], body, **{"X-Webhook-Secret": secret}).status_code

    # then both secrets are valid within the grace period
    assert send(old, "g1") == 200
    assert send(new, "g2") == 200
    # and after it only the new one is
    later = webhook_secrets.now() + timedelta(hours=1, seconds=1)
    monkeypatch.setattr(webhook_secrets, "now", lambda: later)
    assert send(old, "g3") == 401
    assert send(new, "g4") == 200
    assert TriggerEvent.objects.filter(status_code=401).count() == 1
