"""Undo, unsend and uncompact frames (docs/protocol.md `process-undo`, `process-unsend`,
`process-uncompact`): parse, call the one service, reply."""

from __future__ import annotations

from gateway.frames.socket import FrameHandler, Socket
from processes.actions.uncompact import uncompact
from processes.actions.undo import undo_turn
from processes.actions.unsend import unsend_message
from processes.presenters import process_data
from protocol import inbound as p
from protocol import outbound as out
from vancetope.ids import parse_public_id
from vancetope.service_calls import call_service


async def process_undo(socket: Socket, frame: p.ProcessUndo) -> None:
    pk = parse_public_id("tp", frame.data.processId, "process")
    undone = await call_service(undo_turn, pk, user=socket.user)
    data = out.ProcessUndoneData.model_validate(
        {"process": process_data(undone.process), "undone": undone.data()}
    )
    await socket.send_model(out.ProcessUndone(replyTo=frame.id, data=data))


async def process_uncompact(socket: Socket, frame: p.ProcessUncompact) -> None:
    pk = parse_public_id("tp", frame.data.processId, "process")
    undone = await call_service(uncompact, pk, user=socket.user)
    data = out.ProcessUncompactedData.model_validate(undone.data())
    await socket.send_model(out.ProcessUncompacted(replyTo=frame.id, data=data))


async def process_unsend(socket: Socket, frame: p.ProcessUnsend) -> None:
    pk = parse_public_id("tp", frame.data.processId, "process")
    message = await call_service(unsend_message, pk, frame.data.seq, user=socket.user)
    data = out.ProcessUnsentData(processId=f"tp_{message.process_id}", seq=message.seq)
    await socket.send_model(out.ProcessUnsent(replyTo=frame.id, data=data))


HANDLERS: dict[str, FrameHandler] = {
    "process-undo": process_undo,
    "process-unsend": process_unsend,
    "process-uncompact": process_uncompact,
}
