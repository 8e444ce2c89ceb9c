"""One run on a timeline (the web UI's run page): what happened between its start and its end
(or now, while it runs), as lanes of bars and a list of moments.

Lanes: the run's own status (its RunTransition rows: running, blocked, running again, …; a
person's run, which records none, is one bar from its start to its end), then one lane per
process of its tree (the run's process and the children under it), a bar for each span in
a status (RUNNING, IDLE, BLOCKED, …) from its ProcessTransition rows. Moments: those
transitions and the turns' messages (ConversationMessage rows), in time order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from processes.models import ConversationMessage, ProcessTransition, ThinkProcess
from triggers.models import RunLog, RunTransition

# Bounds what one page reads of a long run.
MOMENT_LIMIT = 500


@dataclass
class Lane:
    label: str
    bars: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Timeline:
    start: datetime
    end: datetime
    lanes: list[Lane]
    moments: list[dict[str, Any]]


def run_timeline(run: RunLog) -> Timeline:
    start, end = run.started_at, run.finished_at or timezone.now()
    span = max((end - start).total_seconds(), 0.001)

    def place(at: datetime) -> float:
        return min(max((at - start).total_seconds() / span * 100, 0.0), 100.0)

    def bar(status: str, since: datetime, until: datetime) -> dict[str, Any]:
        left = place(since)
        return {
            "status": status,
            "left": f"{left:.2f}",
            "width": f"{max(place(until) - left, 0.5):.2f}",
            "seconds": f"{(until - since).total_seconds():.2f}",
        }

    lanes = [Lane(run.public_id, _run_bars(run, end, bar))]
    moments: list[dict[str, Any]] = [
        {"at": t.at, "who": run.public_id, "what": f"{t.from_status or 'new'} → {t.to_status}"}
        for t in RunTransition.objects.filter(run=run).order_by("at", "pk")
    ]
    tree = _tree(run)
    window = Q(at__gte=start, at__lte=end)
    moves = ProcessTransition.objects.filter(window, process_id__in=tree).order_by("at", "pk")
    by_process: dict[int, list[ProcessTransition]] = {}
    for move in moves[:MOMENT_LIMIT]:
        by_process.setdefault(move.process_id, []).append(move)
        detail = f" ({move.close_reason})" if move.close_reason else ""
        moments.append(
            {
                "at": move.at,
                "who": f"tp_{move.process_id}",
                "what": f"{move.from_status} → {move.to_status}{detail}",
            }
        )
    for pk in tree:
        found = by_process.get(pk, [])
        bars = [
            bar(move.to_status, move.at, found[i + 1].at if i + 1 < len(found) else end)
            for i, move in enumerate(found)
        ]
        if bars:
            lanes.append(Lane(f"tp_{pk}", bars))
    said = ConversationMessage.objects.filter(
        process_id__in=tree, created_at__gte=start, created_at__lte=end
    ).exclude(role="system")
    for message in said.order_by("created_at", "pk")[:MOMENT_LIMIT]:
        text = (message.content or "").strip().replace("\n", " ")
        moments.append(
            {
                "at": message.created_at,
                "who": f"tp_{message.process_id}",
                "what": f"{message.role}: {text[:120]}" if text else message.role,
            }
        )
    moments.sort(key=lambda moment: moment["at"])
    for moment in moments:
        moment["offset"] = f"{place(moment['at']):.2f}"
    return Timeline(start, end, lanes, moments)


def _run_bars(run: RunLog, end: datetime, bar: Any) -> list[dict[str, Any]]:
    moves = list(RunTransition.objects.filter(run=run).order_by("at", "pk"))
    if not moves:
        return [bar(run.status, run.started_at, end)]
    return [
        bar(move.to_status, move.at, moves[i + 1].at if i + 1 < len(moves) else end)
        for i, move in enumerate(moves)
        if i + 1 < len(moves) or run.finished_at is None
    ] or [bar(run.status, run.started_at, end)]


def _tree(run: RunLog) -> list[int]:
    """The run's process and every process under it (by pk, in order)."""
    if run.process_id is None:
        return []
    rows = ThinkProcess.objects.filter(Q(pk=run.process_id) | Q(root_id=run.process_id))
    return list(rows.order_by("pk").values_list("pk", flat=True)[:50])
