"""What the lane tells the observability kernel: the facts of the process it drives (for logs
and metric labels), and each turn's span, outcome and duration. Nothing here reads or writes
the database: a turn's statements are the same with tracing and metrics on."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from django.utils import timezone

from processes.lane.lease import Lease
from processes.models import PendingMessage, ThinkProcess
from vancetope.ids import public_id
from vancetope.observability import metrics, tracing
from vancetope.observability.logs import Facts
from vancetope.tenancy.models import Project

# The process param that names its run (triggers/runs/system.py RUN_PARAM; processes never import
# triggers).
RUN_PARAM = "runId"


def project_of(lease: Lease) -> str:
    """The project's public id (proj_default): the label of the lane's metrics, its spans'
    and its log lines' project, as REST names it."""
    return Project.public_id_of(lease.project_slug) if lease.project_slug else ""


def facts_of(lease: Lease) -> Facts:
    process = lease.process
    if process is None:
        return Facts(process=public_id("tp", lease.process_id), project=project_of(lease))
    return Facts(
        process=process.public_id,
        session=public_id("sess", process.session_id),
        run=str(process.engine_params.get(RUN_PARAM, "")),
        project=project_of(lease),
        engine=process.think_engine,
        recipe=process.recipe_name,
    )


class TurnWatch:
    """Around one turn (one pending message: the engine's steer and its commit): a span, a
    child of the span the process was created under, then the turn counted by outcome."""

    def __init__(self, process: ThinkProcess, message: PendingMessage, facts: Facts) -> None:
        self._process = process
        self._message = message
        self._facts = facts
        # ok, unless the lane says otherwise: interrupted, blocked, budget, failed.
        self.outcome = "ok"
        self._error: BaseException | None = None
        self._started = 0.0
        self._span: Any = None
        self._opened: Any = None

    def woken(self) -> None:
        """The first turn of a lane's run: how long its message waited for the lane."""
        waited = timezone.now() - self._message.created_at
        metrics.wake_lag(waited.total_seconds())

    def failed(self, outcome: str, error: BaseException | None = None) -> None:
        self.outcome = outcome
        self._error = error

    def __enter__(self) -> TurnWatch:
        self._started = time.monotonic()
        process, facts = self._process, self._facts
        attributes: dict[str, str | int] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": facts.process,
            "gen_ai.agent.name": facts.recipe,
            "gen_ai.conversation.id": facts.session,
            "vancetope.engine": facts.engine,
            "vancetope.recipe": facts.recipe,
            "vancetope.project": facts.project,
            "vancetope.run": facts.run,
            "vancetope.message.kind": self._message.kind,
            "vancetope.message.seq": self._message.seq,
        }
        self._span = tracing.span(
            f"invoke_agent {facts.engine}", attributes, parent=process.trace_parent
        )
        self._opened = self._span.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None and self.outcome == "ok":
            self.outcome = "failed"
        if self._opened is not None:
            self._opened.set_attribute("vancetope.turn.outcome", self.outcome)
            if self._error is not None:
                tracing.fail(self._opened, self._error)
        self._span.__exit__(kind, error, traceback)
        metrics.turn(self._facts.engine, self.outcome, time.monotonic() - self._started)
