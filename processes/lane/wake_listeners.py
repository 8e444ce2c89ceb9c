"""Wakes of a lane, as other apps hear them: a wake is one run of a process over its pending
messages, from the turn that moves it to RUNNING until it rests (IDLE, BLOCKED or CLOSED).

The lane sends `wake_committed` (processes/signals.py) inside each commit of the wake (the
turn's, or the one that ends a run it could not commit): the status the commit leaves (RUNNING
while more messages wait), with the wake's totals so far. A receiver writes in that same
transaction and may return events, which are stored with the commit's own (triggers/ writes
the run logs of a person's turns this way, connected in its AppConfig.ready, so processes/
imports none of it). A receiver must cost no query for a process it ignores: the chat turn's
statements are counted (tests/infra/test_turn_queries.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from engines.context import TurnUsage
from processes import signals
from processes.models import ThinkProcess
from protocol.outbound import Event


@dataclass
class Wake:
    process: ThinkProcess
    started_at: datetime
    turns: int = 0
    tokens: int = 0
    llm_calls: int = 0
    # What a receiver keeps of this wake between its commits (triggers/: its run log is stored).
    stored: dict[str, int] = field(default_factory=dict)
    # The status the process woke from (BLOCKED: a question answered, a provider back).
    woke_from: str = ""


def committed(
    wake: Wake, status: str, reason: str, usage: TurnUsage | None = None, messages: int = 1
) -> list[Event]:
    """Inside a commit of the wake: count the turn (with `usage`; a turn that steered several
    `messages` counts as that many) and send `wake_committed`; the events its receivers
    return are for the caller to store with its own. A receiver's failure fails the commit."""
    if usage is not None:
        wake.turns += messages
        wake.tokens += usage.prompt_tokens + usage.completion_tokens
        wake.llm_calls += usage.llm_calls
    events: list[Event] = []
    for _receiver, returned in signals.wake_committed.send(
        ThinkProcess, wake=wake, status=status, reason=reason
    ):
        events.extend(cast("list[Event]", returned))
    return events
