"""A run's `run` events (docs/protocol.md): a system run's go to every open session of its owner
as the run starts and finishes (triggers/transitions.py calls the announcer it is given); a
person's run's to the session it runs in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.outbound import Event, RunEvent
from protocol.outbound import event as build_event
from sessions_app.events import emit_event
from sessions_app.models import Session, SessionStatus
from triggers.models import RunLog
from triggers.presenters import run_data


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


def person_run_event(run: RunLog, project_slug: str) -> Event:
    """The `run` event of a person's run (triggers/runs/human.py), for the session it runs in,
    whose turn stores it in one statement with the turn's other events. Not sent to the
    person's other sessions: they do not see that session's process move either, and with
    many sessions open each turn would write one event per session (bench/parallel_sessions.py:
    ten sessions of one person fell from 234 to 146 turns/s)."""
    return build_event(RunEvent.model_validate({"run": run_data(run, project_slug)}))


def _open_sessions(owner_id: int) -> list[Any]:
    return list(
        Session.objects.filter(owner_id=owner_id, status=SessionStatus.OPEN).values_list("id")
    )


def _announce_to(owned: list[Any], run: RunLog) -> None:
    if not owned:
        return  # a system owner's (or an offline person's) run: no event to build
    data = build_event(RunEvent.model_validate({"run": run_data(run)}))
    for (session_id,) in sorted(owned):
        emit_event(session_id, *data)
