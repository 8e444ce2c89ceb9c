"""The workflow frame (docs/protocol.md): parse, call one triggers service, reply.

`workflow-start` runs the workflow in the person's own session (it is their request): its
process and task tree are theirs to see and steer; its run log says `clientType` of that
session and trigger `workflow`."""

from __future__ import annotations

from typing import Any

from gateway.frames.errors import in_frame
from gateway.frames.socket import FrameHandler, Socket
from processes.presenters import process_data
from protocol import inbound as p
from protocol import outbound as out
from triggers.runs import system as runs
from vancetope.errors import BadRequest
from vancetope.service_calls import call_service


async def workflow_start(socket: Socket, frame: p.WorkflowStart) -> None:
    session_id = socket.bound_session_id()

    def starting() -> dict[str, Any]:
        started = runs.start_workflow_in_session(
            socket.user, session_id, frame.data.workflowId, frame.data.input
        )
        return {"process": process_data(started.process), "runId": started.run.public_id}

    try:
        data = out.WorkflowStartedData.model_validate(await call_service(starting))
    except BadRequest as exc:
        raise in_frame(exc) from exc
    await socket.send_model(out.WorkflowStarted(replyTo=frame.id, data=data))


HANDLERS: dict[str, FrameHandler] = {"workflow-start": workflow_start}
