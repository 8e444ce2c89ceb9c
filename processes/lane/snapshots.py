"""What an undo needs of a turn on a person's message: the process as it was before the turn.

The lane takes the snapshot before the engine's steer and the turn's commit stores it on the
message it consumes, in the statement that consumes it (no round trip of its own). Only the
newest VANCETOPE_UNDO_KEEP_TURNS turns of a process keep theirs: every that many consumed
messages, the commit clears the older ones in one statement (processes/actions/undo.py refuses
a turn older than that either way).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.utils import timezone

from processes.models import PendingKind, PendingMessage, ThinkProcess
from vancetope.infra import fastsql


def keep_turns() -> int:
    return max(1, int(settings.VANCETOPE_UNDO_KEEP_TURNS))


def before_turn(
    process: ThinkProcess, message: PendingMessage, params: dict[str, Any]
) -> dict[str, Any] | None:
    """The snapshot of a person's message's turn, taken before the engine runs it (None for
    other messages: reports, answers, the process's own turns are not undone by themselves).
    A copy of the state (an engine may change it in place), made through JSON, which is what it
    is stored as (several times faster than copy.deepcopy on a large task tree); `params` is
    the copy the lane's context already took (Prepared.params_found)."""
    if message.kind != PendingKind.USER:
        return None
    state = process.engine_state
    return {
        "engineState": json.loads(json.dumps(state)) if state else {},
        "engineParams": params,
        "conversationLength": process.conversation_length,
        "at": timezone.now().isoformat(),
    }


def prune_due(consumed_count: int) -> bool:
    """Whether the commit that brings the process to `consumed_count` clears old snapshots."""
    return consumed_count % keep_turns() == 0


# The consumed messages of a person of a process, newest first (the kept ones are the first).
_TURNS = "{process_id} = %s AND {kind} = %s AND {consumed_fence} IS NOT NULL"
_PRUNED = (
    f"{_TURNS} AND {{undo_snapshot}} IS NOT NULL AND {{seq}} < "
    f"(SELECT {{seq}} FROM {{table}} WHERE {_TURNS} ORDER BY {{seq}} DESC LIMIT 1 OFFSET %s)"
)


def prune(process_id: int) -> int:
    """Clear the snapshots of all but the process's newest kept turns (one statement, prepared
    once: it runs inside the turn's commit)."""
    turns = [process_id, PendingKind.USER]
    return fastsql.update(
        PendingMessage, _PRUNED, [*turns, *turns, keep_turns() - 1], {"undo_snapshot": None}
    )
