"""Inbound webhook deliveries (docs/protocol.md, "Inbound webhooks answer …"): one use case,
`receive`, which the ASGI endpoint (triggers/webhooks/endpoint.py) calls with the raw body it
read under the cap. Every delivery to a webhook leaves a TriggerEvent row with its reason, but
for refusals past VANCETOPE_RATE_WEBHOOK_REFUSALS of that webhook, which are only counted, as
are deliveries to ids that name no webhook (unauthenticated requests must not fill the
database); rows older than VANCETOPE_TRIGGER_EVENT_RETENTION_DAYS are pruned.

In order: a body over VANCETOPE_WEBHOOK_MAX_BYTES is a 413; a webhook-timestamp outside 5
minutes a 400 (checked before the webhook is looked up, so it says nothing about which ids
exist); an unknown webhook, a missing or wrong secret or signature are one and the same 401
(same body, same headers: no oracle); only then is the body parsed (a body that is not JSON is
a 400), the filter applied (202 `{filtered: true}`), the delivery id claimed by a unique row (a
replay answers 200 with the first run's id and runs nothing) and the action run: 200 `{runId}`.

A template naming a path the payload lacks (`${event.issue.key}`) is a 400 naming it, and
nothing runs (the TriggerEvent says so): a sender's retry of the same payload fails the same
way, a corrected one runs.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from processes.actions.external import unblock_external
from sessions_app import transitions as session_transitions
from sessions_app.models import ClientType
from triggers import transitions
from triggers.models import (
    DeliveryOutcome,
    RunLog,
    RunStatus,
    TriggerEvent,
    TriggerType,
    Webhook,
    WebhookDelivery,
    WebhookMode,
)
from triggers.runs import events as run_events
from triggers.runs import system as runs
from triggers.webhooks import secrets as webhook_secrets
from triggers.workflows.services import MISSING, event_value, substitute_event
from vancetope.errors import BrainError
from vancetope.ids import parse_whole_number
from vancetope.infra import fastsql
from vancetope.jsonbody import parse_json, storable_text
from vancetope.observability import metrics
from vancetope.ratelimit import WEBHOOK_REFUSALS, take

log = logging.getLogger(__name__)

SECRET_HEADER = "x-webhook-secret"
SIGNATURE_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
HEADERS = (SECRET_HEADER, *SIGNATURE_HEADERS)
EXCERPT_BYTES = 500
# The one answer of every refused credential (and of an unknown id).
UNAUTHORIZED = {
    "code": 401,
    "error": "unauthenticated",
    "message": "webhook credentials missing or not valid",
}
# How long a replay waits for the first delivery's run id while that delivery still runs.
REPLAY_WAIT_SECONDS = 5.0


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]


@dataclass
class Delivery:
    ref: str
    headers: Mapping[str, str]
    body: bytes | None  # None: over the cap, never read
    size: int
    webhook: Webhook | None = None
    delivery_id: str = ""


def max_bytes() -> int:
    return int(settings.VANCETOPE_WEBHOOK_MAX_BYTES)


def receive(ref: str, headers: Mapping[str, str], body: bytes | None, size: int) -> Answer:
    """Answer one delivery to `/api/webhooks/{ref}`. `headers` are lower-cased names;
    `body` is None when it was over the cap (`size` then what was declared or read)."""
    delivery = Delivery(ref, headers, body, size)
    delivery.delivery_id = storable_text((headers.get("webhook-id") or "").strip()[:200])
    # For the record only: no answer before the credentials' depends on it.
    delivery.webhook = _webhook(ref)
    if body is None or size > max_bytes():
        return _record(delivery, 413, DeliveryOutcome.REFUSED, f"body over {max_bytes()} bytes")
    problem = webhook_secrets.timestamp_problem(headers.get("webhook-timestamp"))
    if problem:
        return _record(delivery, 400, DeliveryOutcome.REFUSED, problem)
    refusal = _credentials_refusal(delivery.webhook, headers, body)
    if refusal:
        return _record(delivery, 401, DeliveryOutcome.REFUSED, refusal, UNAUTHORIZED)
    try:
        event = parse_json(body, "the body")
    except BrainError as exc:
        return _refused_by(delivery, exc)
    assert delivery.webhook is not None
    return _accept(delivery, delivery.webhook, event)


def _webhook(ref: str) -> Webhook | None:
    head, _, tail = ref.partition("_")
    pk = parse_whole_number(tail) if head == "wh" else None
    if pk is None:
        return None
    found = fastsql.select(Webhook, "{id} = %s", [pk])
    return found[0] if found else None


def _credentials_refusal(webhook: Webhook | None, headers: Mapping[str, str], body: bytes) -> str:
    """Why the credentials are refused ("" when they hold); every refusal answers alike."""
    if webhook is None:
        return "no such webhook"
    if webhook.mode == WebhookMode.SECRET:
        given = headers.get(SECRET_HEADER)
        if not given:
            return f"missing {SECRET_HEADER}"
        return "" if webhook_secrets.secret_matches(webhook, given) else "wrong secret"
    missing = [name for name in SIGNATURE_HEADERS if not headers.get(name)]
    if missing:
        return f"missing {', '.join(missing)}"
    verified = webhook_secrets.signature_matches(webhook, body, headers)
    return "" if verified else "no valid signature in webhook-signature"


def _accept(delivery: Delivery, webhook: Webhook, event: Any) -> Answer:
    unmatched = _unmatched_filter(webhook.filter, event)
    if unmatched:
        reason = f"filter: {unmatched}"
        return _record(delivery, 202, DeliveryOutcome.FILTERED, reason, {"filtered": True})
    if not delivery.delivery_id:
        delivery.delivery_id = f"dlv_{uuid.uuid4().hex}"  # nothing to deduplicate by
    action = webhook.action
    if action.get("type") == "run_workflow":
        return _run_workflow(delivery, webhook, event)
    try:
        key = substitute_event(str(action["match"]["blockedByExternal"]), event)
    except BrainError as exc:
        return _refused_by(delivery, exc)  # nothing claimed: a corrected retry runs
    return _unblock(delivery, webhook, key, event)


def _unmatched_filter(wanted: dict[str, Any], event: Any) -> str:
    for path, value in wanted.items():
        found = event_value(event, path)
        if found is MISSING or found != value:
            return f"{path} is {'missing' if found is MISSING else repr(found)}, not {value!r}"
    return ""


def _replay(delivery: Delivery, webhook: Webhook) -> Answer:
    deadline = time.monotonic() + REPLAY_WAIT_SECONDS
    while True:
        claim = fastsql.values(
            WebhookDelivery,
            ["run"],
            "{webhook} = %s AND {delivery_id} = %s",
            [webhook.pk, delivery.delivery_id],
        )
        if not claim or claim[0][0] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    run_id = f"run_{claim[0][0]}" if claim and claim[0][0] else None
    reason = f"webhook-id {delivery.delivery_id!r} seen before: nothing ran"
    body = {"runId": run_id, "replayed": True}
    return _record(delivery, 200, DeliveryOutcome.REPLAYED, reason, body)


def _trigger_ids(delivery: Delivery, webhook: Webhook) -> dict[str, str]:
    return {"webhook_id": webhook.public_id, "delivery_id": delivery.delivery_id}


def _run_workflow(delivery: Delivery, webhook: Webhook, event: Any) -> Answer:
    """run_workflow: the delivery id is claimed first, in a transaction of its own (the
    workflow's run opens a session and starts a process, in transactions of their own), then
    the run starts; its claim and TriggerEvent are written in one transaction after it."""
    claim = WebhookDelivery(webhook=webhook, delivery_id=delivery.delivery_id)
    try:
        with transaction.atomic():
            fastsql.insert([claim], returning_pk=True)
    except IntegrityError:
        return _replay(delivery, webhook)
    action = webhook.action
    try:
        values = {
            name: substitute_event(template, event)
            for name, template in dict(action.get("input") or {}).items()
        }
        started = runs.run_workflow(
            webhook.owner,
            str(action["workflowId"]),
            values,
            runs.Trigger(
                TriggerType.WEBHOOK, ClientType.WEBHOOK, **_trigger_ids(delivery, webhook)
            ),
        )
    except BrainError as exc:
        # Nothing ran: the id is free again, so a corrected retry runs.
        claim.delete()
        return _refused_by(delivery, exc)
    run, note = started.run, f"started {started.process.public_id}"
    with transaction.atomic():
        fastsql.update(WebhookDelivery, "{id} = %s", [claim.pk], {"run": run.pk})
        return _record(
            delivery, 200, DeliveryOutcome.ACCEPTED, note, {"runId": run.public_id}, run=run
        )


class _Replayed(Exception):  # noqa: N818 (not an error: the delivery id was claimed before)
    """Leaves a delivery's transaction, rolling back what it wrote, when its claim is taken."""


def _unblock(delivery: Delivery, webhook: Webhook, key: str, event: Any) -> Answer:
    """unblock_tasks as a run: every process of the webhook's project BLOCKED on `key` is
    steered with the event; the run counts them. Like every system client's, the run opens a
    system session of its own (client type `webhook`) and closes it when the action is done.
    The session, the run (started and finished), the claim of the delivery id (carrying the
    run) and the TriggerEvent are one transaction: a replay, whose claim meets the first one's
    unique row, rolls back everything it wrote (its session too) and answers the first run."""
    announce = run_events.announcer(webhook.owner_id)
    try:
        with transaction.atomic():
            session = runs.open_system_session(webhook.project, ClientType.WEBHOOK)
            run = transitions.start(
                RunLog(
                    owner_id=webhook.owner_id,
                    project_id=webhook.project_id,
                    session=session,
                    owns_session=True,
                    client_type=ClientType.WEBHOOK,
                    trigger_type=TriggerType.WEBHOOK,
                    **_trigger_ids(delivery, webhook),
                ),
                announce,
            )
            claim = WebhookDelivery(webhook=webhook, delivery_id=delivery.delivery_id, run=run)
            try:
                fastsql.insert([claim])
            except IntegrityError:
                raise _Replayed from None
            unblocked = unblock_external(webhook.project_id, key, event)
            changes = {"tasks_executed": len(unblocked)}
            transitions.finish(run, RunStatus.COMPLETED, changes, announce)
            # It started no process in its session: closing it is its status change alone.
            session_transitions.apply(session, session_transitions.SessionCall.CLOSE)
            note = f"unblocked {', '.join(unblocked) or 'nothing'} waiting for {key!r}"
            body = {"runId": run.public_id}
            return _record(delivery, 200, DeliveryOutcome.ACCEPTED, note, body, run=run)
    except _Replayed:
        return _replay(delivery, webhook)


def _refused_by(delivery: Delivery, exc: BrainError) -> Answer:
    body = {"code": exc.code, "error": exc.error, "message": exc.message}
    return _record(delivery, exc.code, DeliveryOutcome.REFUSED, exc.message, body)


@dataclass
class UnstoredRefusals:
    """Refusals counted, not stored, in this OS process; logged at most once a minute."""

    unknown_id: int = 0
    over_limit: int = 0
    logged_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, unknown: bool) -> None:
        with self.lock:
            if unknown:
                self.unknown_id += 1
            else:
                self.over_limit += 1
            now = time.monotonic()
            if now - self.logged_at < 60:
                return
            self.logged_at = now
            unknown_id, over_limit = self.unknown_id, self.over_limit
        log.warning(
            "webhook refusals not stored so far: %s to unknown ids, %s over a webhook's limit",
            unknown_id,
            over_limit,
        )


unstored = UnstoredRefusals()


def _stored(delivery: Delivery, outcome: DeliveryOutcome) -> bool:
    """Whether this delivery gets its TriggerEvent row (a refusal without a webhook, or past
    its webhook's refusal limit, is only counted)."""
    if delivery.webhook is None:
        unstored.count(unknown=True)
        return False
    if outcome == DeliveryOutcome.REFUSED and not take(
        WEBHOOK_REFUSALS, f"wh_{delivery.webhook.pk}"
    ):
        unstored.count(unknown=False)
        return False
    return True


# Refusals whose answer names no error of its own, by their HTTP status.
REFUSAL_LABELS = {413: "too_large", 400: "bad_timestamp", 401: "unauthenticated"}


def _reason_label(delivery: Delivery, status: int, outcome: str, body: dict[str, Any]) -> str:
    """A bounded reason for the deliveries metric (the stored reason is free text)."""
    if outcome != DeliveryOutcome.REFUSED:
        return outcome
    if delivery.webhook is None:
        return "unknown_webhook"
    error = str(body.get("error", ""))
    if error in ("", "refused", "unauthenticated"):
        return REFUSAL_LABELS.get(status, f"http_{status}")
    return error


def prune_trigger_events(now: datetime | None = None) -> int:
    """Delete TriggerEvents older than VANCETOPE_TRIGGER_EVENT_RETENTION_DAYS (0: keep all);
    how many went."""
    days = settings.VANCETOPE_TRIGGER_EVENT_RETENTION_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    deleted, _ = TriggerEvent.objects.filter(received_at__lt=cutoff).delete()
    return deleted


def _record(
    delivery: Delivery,
    status: int,
    outcome: DeliveryOutcome,
    reason: str,
    body: dict[str, Any] | None = None,
    *,
    run: RunLog | None = None,
) -> Answer:
    if body is None:
        body = {"code": status, "error": "refused", "message": reason}
    metrics.webhook_delivery(outcome, _reason_label(delivery, status, outcome, body))
    if not _stored(delivery, outcome):
        return Answer(status, body)
    excerpt = (delivery.body or b"")[:EXCERPT_BYTES].decode("utf-8", "replace")
    # One delivery is a few statements; fastsql spares compiling each (bench/webhooks.py).
    # What the sender chose (the id in the path, the body) is recorded as far as a database
    # stores it: a NUL in either is no reason to fail the record, nor the answer.
    event = TriggerEvent(
        webhook=delivery.webhook,
        webhook_ref=storable_text(delivery.ref[:100]),
        delivery_id=delivery.delivery_id,
        status_code=status,
        outcome=outcome,
        reason=reason,
        run=run,
        body_size=delivery.size,
        body_excerpt=storable_text(excerpt),
    )
    fastsql.insert([event])
    return Answer(status, body)
