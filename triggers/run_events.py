"""A run's `run` events (PROTOCOL.md), sent to every open session of its owner as the run
starts and finishes (triggers/transitions.py calls the announcer it is given)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessions_app.events import emit_event
from sessions_app.models import Session, SessionStatus
from sessions_app.protocol.outbound import Event, RunEvent
from sessions_app.protocol.outbound import event as build_event
from triggers.models import RunLog
from triggers.presenters import run_data
from vancetope.infra import fastsql


def announce(run: RunLog) -> None:
    """The `run` event, for every open session of the run's owner."""
    _announce_to(_open_sessions(run.owner_id), run)


def announcer(owner_id: int) -> Callable[[RunLog], None]:
    """`announce` for the runs of one owner within one transaction (a webhook delivery's run
    starts and finishes in one): the owner's open sessions are looked up once."""
    found: list[list[Any]] = []

    def announce_once(run: RunLog) -> None:
        if not found:
            found.append(_open_sessions(owner_id))
        _announce_to(found[0], run)

    return announce_once


def person_run_events(run: RunLog, project_slug: str, session_id: int) -> list[Event]:
    """The `run` event of a person's run (triggers/human_runs.py), as its process's turn
    commits: stored for the owner's other open sessions here, and answered for the run's own
    session, whose events the turn stores in one statement with its own."""
    owned = _open_sessions(run.owner_id)
    if not owned:
        return []
    data = build_event(RunEvent.model_validate({"run": run_data(run, project_slug)}))
    own = False
    for (open_id,) in sorted(owned):
        if open_id == session_id:
            own = True
        else:
            emit_event(open_id, *data)
    return [data] if own else []


def _open_sessions(owner_id: int) -> list[Any]:
    return fastsql.values(
        Session, ["id"], "{owner} = %s AND {status} = %s", [owner_id, SessionStatus.OPEN]
    )


def _announce_to(owned: list[Any], run: RunLog) -> None:
    if not owned:
        return  # a system owner's (or an offline person's) run: no event to build
    data = build_event(RunEvent.model_validate({"run": run_data(run)}))
    for (session_id,) in sorted(owned):
        emit_event(session_id, *data)
