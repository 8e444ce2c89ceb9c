"""Reading processes: what a user may see, one process as the lane loads it, pending work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from processes.lane.interrupts import INTERRUPT_TTL, interrupt_is_fresh
from processes.models import PendingMessage, ThinkProcess
from processes.states import WAKE_ON_MESSAGE
from sessions_app.models import Session
from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.infra import fastsql


def visible_processes(user: Any) -> QuerySet[ThinkProcess]:
    """Every process of the user's own sessions, service processes they created too (whatever
    the user's role: nobody sees another user's processes). The system's service processes
    (agrajag) run in system sessions, which no person owns."""
    if not user.is_authenticated:
        return ThinkProcess.objects.none()
    return ThinkProcess.objects.filter(session__owner=user).select_related("session", "parent")


def readable_processes(user: Any) -> QuerySet[ThinkProcess]:
    """What the user may read: their own (`visible_processes`) and the processes of the
    system runs they own (a workflow run over REST, cron or a webhook, in a `_system`
    session), which they read but do not change."""
    if not user.is_authenticated:
        return ThinkProcess.objects.none()
    mine = Q(session__owner=user) | Q(run_owner=user)
    return ThinkProcess.objects.filter(mine).select_related("session", "parent")


# A process list's categories: the ordinary list (`user`) leaves out the processes of service
# recipes (`category: service`), which a person sees only when asking for them (`service`).
CATEGORIES = ("user", "service")


def in_category(
    rows: QuerySet[ThinkProcess], category: str | None, field: str = "category"
) -> QuerySet[ThinkProcess]:
    """The rows of one listing category (None or "": the ordinary list); another value is a
    400 naming `field`."""
    if category not in (None, "", *CATEGORIES):
        raise BadRequest(
            f"{field} must be one of {', '.join(CATEGORIES)}, not {category!r}", field=field
        )
    service = Q(recipe_snapshot__category="service")
    return rows.filter(service) if category == "service" else rows.exclude(service)


def get_readable_process(user: Any, process_id: int) -> ThinkProcess:
    process = readable_processes(user).filter(pk=process_id).first()
    if process is None:
        raise NotFound(f"process tp_{process_id} not found")
    return process


def is_visible(process: ThinkProcess, user: Any) -> bool:
    """The rule of `visible_processes` for one loaded process (with its session)."""
    return bool(user.is_authenticated) and process.session.owner_id == user.pk


def check_changeable(process: ThinkProcess, user: Any) -> None:
    """Refuse a change of a process the user does not own: a process of a system run of
    theirs is a 409 saying why (they read it), any other a 404."""
    if is_visible(process, user):
        return
    if user.is_authenticated and process.run_owner_id == user.pk:
        raise Conflict(
            f"process {process.public_id} belongs to a system run of yours: you can read "
            "it, but only the run changes it"
        )
    raise NotFound(f"process {process.public_id} not found")


def get_visible_process(user: Any, process_id: int) -> ThinkProcess:
    """One of the user's own processes, to change (see `check_changeable`)."""
    process = get_readable_process(user, process_id)
    check_changeable(process, user)
    return process


def pending_count(process_id: int) -> int:
    process = ThinkProcess.objects.only("next_pending_seq", "consumed_count").get(pk=process_id)
    return process.waiting


def load_process(process_id: int) -> ThinkProcess:
    """The process with its session, as the lane reads them (prepared SQL, no joins)."""
    found = fastsql.select(ThinkProcess, "{id} = %s", [process_id])
    if not found:
        raise NotFound(f"process tp_{process_id} not found")
    process = found[0]
    process.session = fastsql.select(Session, "{id} = %s", [process.session_id])[0]
    return process


def has_work(process_id: int) -> bool:
    """A wakeable process with pending messages and no fresh interrupt."""
    row = (
        ThinkProcess.objects.filter(pk=process_id)
        .values("status", "interrupt", "interrupt_at")
        .first()
    )
    if row is None or row["status"] not in WAKE_ON_MESSAGE:
        return False
    if interrupt_is_fresh(row["interrupt"], row["interrupt_at"]):
        return False
    return PendingMessage.objects.filter(process_id=process_id, consumed=False).exists()


def next_pending(process_id: int, *, unless_interrupted: bool = False) -> PendingMessage | None:
    """The process's next pending message; with `unless_interrupted`, none while a fresh
    interrupt waits (checked in the same statement)."""
    found = next_pendings(process_id, 1, unless_interrupted=unless_interrupted)
    return found[0] if found else None


def next_pendings(
    process_id: int, limit: int, *, unless_interrupted: bool = False
) -> list[PendingMessage]:
    """The process's next `limit` pending messages in order, in one statement (a lane that
    may steer several parent reports in one turn reads them with the commit's own read)."""
    where = "{process_id} = %s AND {consumed} = %s"
    params: list[Any] = [process_id, False]
    if unless_interrupted:
        where += " AND NOT EXISTS " + fastsql.sql(
            ThinkProcess,
            "(SELECT 1 FROM {table} WHERE {id} = %s AND {interrupt} <> '' AND {interrupt_at} > %s)",
        )
        fresh_after = timezone.now() - INTERRUPT_TTL
        params += [process_id, connection.ops.adapt_datetimefield_value(fresh_after)]
    return fastsql.select(PendingMessage, where, [*params, limit], tail="ORDER BY {seq} LIMIT %s")


@dataclass(frozen=True)
class SessionFacts:
    """What never changes of a session once it is created: its chat process, whom and which
    project it is for, and what kind of client it is (run logs of a person's turns read it)."""

    chat_process_id: int | None
    owner_id: int
    project_id: int
    client_type: str
    is_human: bool


# Session id → its facts. A session's chat process is set once, when the session is created,
# and never changes, so a lane need not read the session row for it every turn.
_sessions: dict[int, SessionFacts] = {}
CHAT_PROCESS_CACHE = 10_000
FACTS = ("chat_process_id", "owner_id", "project_id", "client_type", "is_human")


def session_facts(session_id: int) -> SessionFacts | None:
    """The session's facts (one statement the first time a worker asks; cached once its chat
    process is set)."""
    found = _sessions.get(session_id)
    if found is None:
        rows = fastsql.values(Session, FACTS, "{id} = %s", [session_id])
        if not rows:
            return None
        found = SessionFacts(*rows[0])
        if found.chat_process_id is not None:
            if len(_sessions) >= CHAT_PROCESS_CACHE:
                _sessions.clear()
            _sessions[session_id] = found
    return found


def chat_process_of(session_id: int) -> int | None:
    facts = session_facts(session_id)
    return None if facts is None else facts.chat_process_id


def forget_chat_process(session_id: int) -> None:
    _sessions.pop(session_id, None)


def forget_sessions() -> None:
    """Drop every cached session's facts (tests: SQLite hands a rolled-back test's ids out
    again, so the next test's session of the same id may be another user's or project's)."""
    _sessions.clear()
