"""Wakes of a lane, as other apps hear them: a wake is one run of a process over its pending
messages, from the turn that moves it to RUNNING until it rests (IDLE, BLOCKED or CLOSED).

The lane tells the wake listeners inside each commit of the wake (the turn's, or the one that
ends a run it could not commit): the status the commit leaves (RUNNING while more messages
wait), with the wake's totals so far. A listener writes in that same transaction and may
return events, which are stored with the commit's own (triggers/ writes the run logs of a
person's turns this way, registered in its AppConfig.ready, so processes/ imports none of it).
A listener must cost no query for a process it ignores: the chat turn's statements are counted
(tests/infra/test_turn_queries.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from engines.context import TurnUsage
from processes.models import ThinkProcess
from sessions_app.protocol.outbound import Event


@dataclass
class Wake:
    process: ThinkProcess
    started_at: datetime
    turns: int = 0
    tokens: int = 0
    llm_calls: int = 0
    # What a listener keeps of this wake between its commits (triggers/: its run log is stored).
    stored: dict[str, int] = field(default_factory=dict)


WakeListener = Callable[[Wake, str, str], list[Event]]
_listeners: list[WakeListener] = []


def on_wake_committed(listener: WakeListener) -> None:
    """Register `listener` (once; a second registration of the same function is ignored)."""
    if listener not in _listeners:
        _listeners.append(listener)


def committed(wake: Wake, status: str, reason: str, usage: TurnUsage | None = None) -> list[Event]:
    """Inside a commit of the wake: count the turn (with `usage`) and tell the listeners;
    the events they return are for the caller to store with its own."""
    if usage is not None:
        wake.turns += 1
        wake.tokens += usage.prompt_tokens + usage.completion_tokens
        wake.llm_calls += usage.llm_calls
    events: list[Event] = []
    for listener in _listeners:
        events.extend(listener(wake, status, reason))
    return events
