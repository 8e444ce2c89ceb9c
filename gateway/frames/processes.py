"""The process frames (docs/protocol.md): `chat`, `process-create`, the lifecycle calls,
`process-get`, `process-list`. (`process-steer` is in steers.py, undo and unsend in undo.py.)"""

from __future__ import annotations

from typing import Any

from gateway.frames.errors import in_frame
from gateway.frames.socket import FrameHandler, Socket
from gateway.lane_calls import call_then_drive
from processes import queries
from processes.actions import create, lifecycle
from processes.actions import steer as steering
from processes.last_task import with_last_turn
from processes.models import ThinkProcess
from processes.presenters import process_data, process_detail, process_row
from protocol import inbound as p
from protocol import outbound as out
from vancetope.errors import BadRequest
from vancetope.ids import parse_public_id
from vancetope.service_calls import call_service

# A lifecycle frame: the lifecycle call it makes and the type of its reply.
LIFECYCLE_REPLIES = {
    "process-start": (lifecycle.start_process, "process-started"),
    "process-pause": (lifecycle.pause_process, "process-paused"),
    "process-resume": (lifecycle.resume_process, "process-resumed"),
    "process-stop": (lifecycle.stop_process, "process-stopped"),
    "process-reset": (lifecycle.reset_process, "process-reset"),
}


async def chat(socket: Socket, frame: p.Chat) -> None:
    # Accepted and its turn run by one lane thread where one is free (gateway/lane_calls.py).
    steered = await call_then_drive(
        steering.send_chat, socket.bound_session_id(), frame.data.text, user=socket.user
    )
    data = out.PendingData(
        processId=f"tp_{steered.message.process_id}",
        pending=steered.pending,
        seq=steered.message.seq,
    )
    await socket.send_model(out.ChatAccepted(replyTo=frame.id, data=data))


async def process_create(socket: Socket, frame: p.ProcessCreate) -> None:
    session = await socket.session()
    data = frame.data
    parent = None
    if data.parentId:
        parent_pk = parse_public_id("tp", data.parentId, "process")
        parent = await call_service(queries.get_visible_process, socket.user, parent_pk)
    try:
        process = await call_service(
            create.create_process,
            session,
            goal=data.goal,
            engine=data.thinkEngine,
            recipe=data.recipe,
            params=data.params,
            parent=parent,
            start=data.start,
            requested_by=socket.user,
        )
    except BadRequest as exc:
        # Params the engine refused (a vogon strategy) name their field.
        raise in_frame(exc) from exc
    await send_process(socket, "process-created", frame.id, process)


async def send_process(
    socket: Socket, kind: str, request_id: str | None, process: ThinkProcess
) -> None:
    data = out.ProcessData(process=process_data(process))
    await socket.send_model(out.ProcessChanged(type=kind, replyTo=request_id, data=data))


async def process_lifecycle(socket: Socket, frame: p.ProcessLifecycle) -> None:
    pk = parse_public_id("tp", frame.data.processId, "process")
    await call_service(queries.get_visible_process, socket.user, pk)
    call, reply_type = LIFECYCLE_REPLIES[frame.type]
    process = await call_service(call, pk)
    await send_process(socket, reply_type, frame.id, process)


async def process_get(socket: Socket, frame: p.ProcessLifecycle) -> None:
    pk = parse_public_id("tp", frame.data.processId, "process")
    process = await call_service(queries.get_readable_process, socket.user, pk)
    detail = await call_service(process_detail, process)
    await socket.send_model(
        out.Process(replyTo=frame.id, data=out.ProcessDetailData(process=detail))
    )


async def process_list(socket: Socket, frame: p.ProcessList) -> None:
    session_id = socket.session_id

    def listing() -> list[dict[str, Any]]:
        rows = queries.readable_processes(socket.user)
        if session_id is not None:
            rows = rows.filter(session_id=session_id)
        if frame.data.status:
            rows = rows.filter(status=frame.data.status)
        rows = queries.in_category(rows, frame.data.category, "data.category")
        return [process_row(process) for process in with_last_turn(rows).order_by("pk")[:500]]

    data = out.ProcessListData(processes=await call_service(listing))
    await socket.send_model(out.ProcessList(replyTo=frame.id, data=data))


HANDLERS: dict[str, FrameHandler] = {
    "chat": chat,
    "process-create": process_create,
    **{kind: process_lifecycle for kind in LIFECYCLE_REPLIES},
    "process-get": process_get,
    "process-list": process_list,
}
