"""`ctx.processes`: a process's children (ARCHITECTURE §5a, "Children never block a thread").

`spawn` creates the child (INIT, in the parent's tree and within its budgets) and returns its
id at once; the parent records in its `engine_state` what it waits for and ends its turn. The
parent's commit marks the children it spawned `autostart`, and once it has committed each is
started in its own lane (processes/lane/wake.py `start_later`; recovery starts any the Brain
stopped before). The child's DONE, BLOCKED, STOPPED or FAILED comes back to the parent as a
ParentReport message, which wakes it. A parent acts only on its own children: any other id is
not found.
"""

from __future__ import annotations

from typing import Any

# Modules, not names: the actions build contexts that hold this capability (an import cycle
# that is harmless as long as nothing here is looked up before it is called).
from processes.actions import create, lifecycle, steer
from processes.models import ThinkProcess
from processes.presenters import process_data
from vancetope.errors import NotFound
from vancetope.ids import parse_public_id


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
        child = create.create_process(
            self._process.session,
            goal=goal,
            recipe=recipe,
            engine=engine,
            params=params,
            parent=self._process,
            start=False,
        )
        self.spawned.append(child.pk)
        return child.public_id

    def _child(self, process_id: str) -> ThinkProcess:
        pk = parse_public_id("tp", process_id, "process")
        child = ThinkProcess.objects.filter(pk=pk, parent_id=self._process.pk).first()
        if child is None:
            raise NotFound(f"process {process_id} is not a child of {self._process.public_id}")
        return child

    def steer(self, process_id: str, message: str) -> None:
        steer.steer_process(self._child(process_id).pk, message)

    def stop(self, process_id: str) -> None:
        lifecycle.stop_process(self._child(process_id).pk)

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        children = ThinkProcess.objects.filter(parent_id=self._process.pk)
        if status:
            children = children.filter(status=status)
        return [process_data(child) for child in children.order_by("pk")]

    def status(self, process_id: str) -> dict[str, Any]:
        child = self._child(process_id)
        return {**process_data(child), "lastError": child.last_error, "waiting": child.waiting}
