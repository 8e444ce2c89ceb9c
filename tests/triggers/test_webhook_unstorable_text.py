"""Inbound deliveries with text no database stores (run on PostgreSQL too, where each was a
500): an id with a NUL is the one 401 of every unknown id; a signed payload with a NUL or a
lone surrogate is a 400 naming where it is; a body with a raw NUL byte a 400 (not JSON). Each
leaves its TriggerEvent and runs nothing."""

from __future__ import annotations

import pytest

from tests.triggers.webhook_helpers import create_webhook, deliver, signed_headers
from triggers.models import RunLog, TriggerEvent
from triggers.webhooks.inbound import UNAUTHORIZED

pytestmark = pytest.mark.django_db(transaction=True)

UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.build}"}}


def test_an_id_with_a_nul_is_the_uniform_401(alice):
    # given a webhook
    hook = create_webhook(alice, {"name": "ci", "mode": "secret", "action": UNBLOCK})
    # when a delivery names its id with a NUL after it (`%00`, decoded by the server)
    response = deliver(hook["id"] + "\x00", "{}", **{"X-Webhook-Secret": hook["secret"]})
    # then it is the answer of every unknown id, which is counted, not stored
    assert response.status_code == 401, response.content[:300]
    assert response.json() == UNAUTHORIZED
    assert not TriggerEvent.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"build": "a\\u0000"}', "build: must not contain NUL characters"),
        ('{"build": "a\\ud800"}', "build: must not contain a lone surrogate"),
        ('{"a\\u0000": 1}', "body: a key must not contain NUL characters"),
        ('{"build": 7}\x00', "the body is not JSON"),
    ],
)
def test_a_signed_payload_with_unstorable_text_is_a_400_and_runs_nothing(alice, body, message):
    # given a signature-mode webhook
    hook = create_webhook(alice, {"name": "ci", "mode": "signature", "action": UNBLOCK})
    # when a correctly signed payload holds a NUL or a lone surrogate
    response = deliver(hook["id"], body, **signed_headers(hook["secret"], "msg_n", body))
    # then it is a 400 saying where, it is recorded, and nothing runs
    assert response.status_code == 400, response.content[:300]
    assert response.json()["message"].startswith(message), response.json()
    assert TriggerEvent.objects.get().status_code == 400
    assert RunLog.objects.count() == 0
