"""`ctx.processes`: a process's children (docs/engines.md: children never block a thread).

`spawn` creates the child (INIT, in the parent's tree and within its budgets) and returns its
id at once; the parent records in its `engine_state` what it waits for and ends its turn. The
parent's commit marks the children it spawned `autostart`, and once it has committed each is
started in its own lane (processes/lane/dispatch.py `start_later`; recovery starts any the Brain
stopped before). The child's DONE, BLOCKED, STOPPED or FAILED comes back to the parent as a
ParentReport message, which wakes it. A parent acts only on its own children: any other id is
not found.
"""

from __future__ import annotations

from typing import Any

# Modules, not names: the actions build contexts that hold this capability (an import cycle
# that is harmless as long as nothing here is looked up before it is called).
from processes.actions import create, lifecycle, pending
from processes.models import PendingKind, ThinkProcess
from processes.presenters import process_data
from processes.states import Status
from sessions_app.models import Session
from vancetope.errors import Conflict, NotFound
from vancetope.ids import parse_public_id
from vancetope.infra import fastsql
from vancetope.observability import tracing
from vancetope.tenancy.models import Project


class ChildProcesses:
    def __init__(self, process: ThinkProcess) -> None:
        self._process = process
        # Spawned by this call: the lane's commit marks them autostart and starts them.
        self.spawned: list[int] = []

    def spawn(
        self,
        *,
        goal: str,
        recipe: str | None = None,
        params: dict[str, Any] | None = None,
        engine: str | None = None,
    ) -> str:
        # The child stores this span as its trace parent: its turns are in this trace.
        attributes = {
            "gen_ai.operation.name": "create_agent",
            "gen_ai.agent.name": recipe or engine or "",
            "vancetope.parent.id": self._process.public_id,
        }
        with tracing.span(f"spawn {recipe or engine or 'process'}", attributes) as opened:
            child = create.create_process(
                self._session(),
                goal=goal,
                recipe=recipe,
                engine=engine,
                params=params,
                parent=self._process,
                start=False,
                spawned_by_turn=True,
            )
            if opened is not None:
                opened.set_attribute("gen_ai.agent.id", child.public_id)
                opened.set_attribute("vancetope.engine", child.think_engine)
        self.spawned.append(child.pk)
        return child.public_id

    def _session(self) -> Session:
        """The process's session with its project, each read once per context by a prepared
        statement (a parent's turn spawns its children in them)."""
        process = self._process
        if not ThinkProcess.session.is_cached(process):  # type: ignore[attr-defined]
            [process.session] = fastsql.select(Session, "{id} = %s", [process.session_id])
        session = process.session
        if not Session.project.is_cached(session):  # type: ignore[attr-defined]
            [session.project] = fastsql.select(Project, "{id} = %s", [session.project_id])
        return session

    def _child(self, process_id: str) -> ThinkProcess:
        pk = parse_public_id("tp", process_id, "process")
        child = ThinkProcess.objects.filter(pk=pk, parent_id=self._process.pk).first()
        if child is None:
            raise NotFound(f"process {process_id} is not a child of {self._process.public_id}")
        return child

    def steer(self, process_id: str, message: str) -> None:
        """A message to a child, held until it can take it: a PAUSED or SUSPENDED child
        reads it after its resume (a person's answer passed on by the chat process must
        reach the worker that asked, whatever happened to the processes between them).
        A CLOSED child takes nothing (409)."""
        child = self._child(process_id)
        if pending.deliver(child.pk, PendingKind.STEER, {"text": message}) is None:
            raise Conflict(f"cannot steer process {process_id}: it is CLOSED")

    def stop(self, process_id: str) -> None:
        child = self._child(process_id)
        if child.status == Status.CLOSED:
            return
        try:
            lifecycle.stop_process(child.pk)
        except Conflict:
            # Closed meanwhile (it finished, or someone else stopped it): nothing left to stop.
            if not ThinkProcess.objects.filter(pk=child.pk, status=Status.CLOSED).exists():
                raise

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        children = ThinkProcess.objects.filter(parent_id=self._process.pk)
        if status:
            children = children.filter(status=status)
        return [process_data(child) for child in children.order_by("pk")]

    def status(self, process_id: str) -> dict[str, Any]:
        child = self._child(process_id)
        return {**process_data(child), "lastError": child.last_error, "waiting": child.waiting}
