"""Undo of a compaction (docs/protocol.md `process-uncompact`): the calls send the messages it
folded again (as far as the window allows), or the previous compaction's summary.

A compaction deletes nothing (processes/lane/compaction.py), so its undo is a mark: its row
gets `undone_at`, and the newest compaction not undone (an earlier one, or none) is the one the
calls use. The undo holds the process's lane, so no turn or compaction runs meanwhile. When the
conversation next comes near its window, a new compaction folds it again, going on from the
compaction in use then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from processes.actions.undo import visible_process
from processes.lane import lease as lanes
from processes.models import Compaction, ThinkProcess
from processes.presenters import (
    active_compaction,
    compaction_data,
    folded_event,
    process_data,
)
from processes.queries import load_process
from sessions_app.events import emit_events
from vancetope.errors import Conflict


@dataclass(frozen=True)
class Uncompacted:
    process: ThinkProcess
    compaction: Compaction

    def data(self) -> dict[str, Any]:
        """The `process-uncompacted` reply's data (docs/protocol.md)."""
        return {
            "process": process_data(self.process),
            "compaction": compaction_data(self.compaction),
        }


def uncompact(process_id: int, *, user: Any = None) -> Uncompacted:
    """Undo the process's compaction in use. 409, and nothing changed, when it has none or a
    turn is running (pause it first or let the turn finish)."""
    process = visible_process(process_id, user)
    lease = lanes.try_acquire(process_id)
    if lease is None:
        raise Conflict(
            f"cannot undo the compaction of {process.public_id}: a turn or a compaction is "
            "running; try again when it is done (or pause the process first)"
        )
    with lanes.holding(lease), transaction.atomic():
        found = active_compaction(process_id)
        if found is None:
            raise Conflict(f"process {process.public_id} has no compaction to undo")
        found.undone_at = timezone.now()
        Compaction.objects.filter(pk=found.pk).update(undone_at=found.undone_at)
        # The calls keep the compaction in use by (epoch, folds) (context_builder).
        ThinkProcess.objects.filter(pk=process_id).update(folds=F("folds") + 1)
        emit_events(process.session_id, [folded_event(found)])
    return Uncompacted(load_process(process_id), found)
