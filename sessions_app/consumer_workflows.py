"""The workflow frames of the WebSocket consumer (PROTOCOL.md, second stage): parse, call one
triggers service, reply. A mixin of BrainConsumer (sessions_app/consumers.py).

`workflow-start` runs the workflow in the person's own session (it is their request): its
process and task tree are theirs to see and steer; its run log says `clientType` of that
session and trigger `workflow`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from processes.presenters import process_data
from sessions_app.consumer_inbox import in_frame
from sessions_app.protocol import inbound as p
from sessions_app.protocol import outbound as out
from sessions_app.service_calls import call_service
from triggers import runs
from vancetope.errors import BadRequest


class WorkflowFrames:
    user: Any

    if TYPE_CHECKING:  # BrainConsumer's

        async def send_model(self, frame: out.Reply) -> None: ...

        def _bound_session_id(self) -> int: ...

    async def on_workflow_start(self, frame: p.WorkflowStart) -> None:
        session_id = self._bound_session_id()

        def starting() -> dict[str, Any]:
            started = runs.start_workflow_in_session(
                self.user, session_id, frame.data.workflowId, frame.data.input
            )
            return {"process": process_data(started.process), "runId": started.run.public_id}

        try:
            data = out.WorkflowStartedData.model_validate(await call_service(starting))
        except BadRequest as exc:
            raise in_frame(exc) from exc
        await self.send_model(out.WorkflowStarted(replyTo=frame.id, data=data))
