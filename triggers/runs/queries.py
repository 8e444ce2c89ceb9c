"""Reading runs: a person's own, filtered as the REST list and the runs page ask (another
user's, in any tenant, are never seen)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime

from sessions_app.models import ClientType
from triggers.models import RunLog, RunStatus, TriggerType
from vancetope.errors import BadRequest
from vancetope.ids import get_by_public_id, parse_whole_number


def visible_runs(user: Any) -> QuerySet[RunLog]:
    """The user's own runs (another user's, in any tenant, are never seen)."""
    if not user.is_authenticated:
        return RunLog.objects.none()
    return RunLog.objects.filter(owner=user).select_related("project")


def get_visible_run(user: Any, run_id: str) -> RunLog:
    return get_by_public_id(visible_runs(user), "run", run_id, "run")


def filtered_runs(
    user: Any,
    *,
    process: str | None = None,
    client_type: str | None = None,
    trigger: str | None = None,
    status: str | None = None,
    since: str | None = None,
) -> QuerySet[RunLog]:
    """The user's runs, newest first; a filter value that names nothing is a 400, an empty
    one (`?status=`) too: only an absent filter (None) is no filter."""
    rows = visible_runs(user)
    if process is not None:
        if not process.startswith("tp_") or parse_whole_number(process[3:]) is None:
            raise BadRequest.naming("process", f"must be a process id like tp_12, not {process!r}")
        rows = rows.filter(process_public_id=process)
    if client_type is not None:
        if client_type not in ClientType.values:
            raise BadRequest.naming("clientType", f"must be one of {', '.join(ClientType.values)}")
        rows = rows.filter(client_type=client_type)
    if trigger is not None:
        if trigger not in TriggerType.values:
            raise BadRequest.naming("trigger", f"must be one of {', '.join(TriggerType.values)}")
        rows = rows.filter(trigger_type=trigger)
    if status is not None:
        if status not in RunStatus.values:
            raise BadRequest.naming("status", f"must be one of {', '.join(RunStatus.values)}")
        rows = rows.filter(status=status)
    if since is not None:
        rows = rows.filter(started_at__gte=_moment(since))
    return rows.order_by("-started_at", "-pk")


# The times `since` takes, as the OpenAPI document states them: ISO 8601 with a zone, of the
# years 1900–2099 and days 01–28 (a narrower set than _moment reads: each such text is a
# time on every calendar, and none overflows when turned to UTC).
SINCE_PATTERN = (
    "^(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    "T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,6})?)?"
    "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)


def _moment(text: str) -> datetime:
    try:
        moment = parse_datetime(text.replace(" ", "+"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise BadRequest.naming(
            "since", "must be an ISO 8601 time with its zone, like 2026-12-01T09:00Z"
        )
    return moment
