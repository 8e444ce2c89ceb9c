"""The statements of an inbound delivery, counted (as tests/infra/test_turn_queries.py counts a
turn's): an accepted unblock_tasks delivery is one transaction after one read (its system
session opened and closed in it), and a replay
rolls back everything it wrote. A statement more on this path fails here, not only as a
slower bench/webhooks.py. `inbound.receive` runs in the test thread, so its statements are
captured on this thread's connection."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.models import ThinkProcess
from sessions_app.models import Session, SessionEvent, SessionTransition
from tests.triggers.webhook_helpers import create_webhook, payload, signed_headers
from triggers.models import RunLog, RunTransition, TriggerEvent, Webhook, WebhookDelivery
from triggers.webhooks import inbound
from vancetope.tenancy.models import Project

pytestmark = pytest.mark.django_db(transaction=True)

HOOK = Webhook._meta.db_table
SESSION = Session._meta.db_table
RUN = RunLog._meta.db_table
TRANSITION = RunTransition._meta.db_table
CLAIM = WebhookDelivery._meta.db_table
PROCESS = ThinkProcess._meta.db_table
EVENT = TriggerEvent._meta.db_table

PROJECT = Project._meta.db_table
USER = get_user_model()._meta.db_table
SESSION_TRANSITION = SessionTransition._meta.db_table
SESSION_EVENT = SessionEvent._meta.db_table

ACCEPTED = [
    f"SELECT {HOOK}",  # the webhook, before its credentials are checked
    "BEGIN",
    f"SELECT {PROJECT}",  # the webhook's project
    f"SELECT {USER}",  # the `_system` user, the owner of system sessions
    f"SELECT {PROJECT}",  # the project, as `_system` sees it (create_session checks)
    f"INSERT {SESSION}",  # the delivery's own system session
    f"INSERT {RUN}",  # the run, running
    f"INSERT {TRANSITION}",  # its record
    f"SELECT {SESSION}",  # the owner's open sessions, for the run's events (once)
    f"INSERT {CLAIM}",  # the delivery id's claim, carrying the run
    f"SELECT {PROCESS}",  # the processes blocked on the key (none here)
    f"UPDATE {RUN}",  # running -> completed
    f"INSERT {TRANSITION}",  # its record
    "SAVEPOINT",
    f"UPDATE {SESSION}",  # the session closes: OPEN -> CLOSED
    f"INSERT {SESSION_TRANSITION}",  # its record
    f"UPDATE {SESSION}",  # its session-status event's seq
    f"INSERT {SESSION_EVENT}",  # the event
    "RELEASE",
    f"INSERT {EVENT}",  # the TriggerEvent, accepted
    "COMMIT",
]
REPLAYED = [
    *ACCEPTED[:10],  # up to the claim, which meets the first delivery's row
    "ROLLBACK",
    f"SELECT {CLAIM}",  # the first delivery's run
    f"INSERT {EVENT}",  # the TriggerEvent, replayed
]
UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.build}"}}


def shape(sql: str) -> str:
    verb = sql.split()[0].upper()
    table = re.search(r'\b(?:UPDATE|INTO|FROM)\s+"?(\w+)', sql)
    return verb if table is None else f"{verb} {table[1]}"


def receive(hook: dict[str, Any], msg_id: str) -> tuple[inbound.Answer, list[str]]:
    body = payload(build=7)
    headers = signed_headers(hook["secret"], msg_id, body)
    with CaptureQueriesContext(connection) as captured:
        answer = inbound.receive(hook["id"], headers, body.encode(), len(body))
    return answer, [shape(query["sql"]) for query in captured.captured_queries]


def test_an_accepted_unblock_delivery_is_one_read_and_one_transaction(alice):
    # given a signature-mode webhook that has had a delivery (`_system` is a project member)
    hook = create_webhook(alice, {"name": "ci", "mode": "signature", "action": UNBLOCK})
    assert receive(hook, "msg_first")[0].status == 200
    # when the next delivery comes
    answer, statements = receive(hook, "msg_second")
    # then it runs the counted statements
    assert answer.status == 200
    assert statements == ACCEPTED


def test_a_replay_rolls_back_what_it_wrote_and_answers_the_first_run(alice):
    hook = create_webhook(alice, {"name": "ci", "mode": "signature", "action": UNBLOCK})
    first, _ = receive(hook, "msg_1")
    # when the same webhook-id comes again
    again, statements = receive(hook, "msg_1")
    # then it answers the first run, leaves no second run nor its records, and says so
    assert again.body == {"runId": first.body["runId"], "replayed": True}
    assert statements == REPLAYED
    assert RunLog.objects.count() == 1
    assert RunTransition.objects.count() == 2
    assert list(TriggerEvent.objects.order_by("pk").values_list("outcome", flat=True)) == [
        "accepted",
        "replayed",
    ]
