"""Undo and unsend frames of the WebSocket consumer (PROTOCOL.md `process-undo`,
`process-unsend`): parse, call the one service, reply. A mixin of BrainConsumer
(sessions_app/consumers.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from processes.actions.undo import undo_turn
from processes.actions.unsend import unsend_message
from processes.presenters import process_data
from sessions_app.protocol import inbound as p
from sessions_app.protocol import outbound as out
from sessions_app.service_calls import call_service
from vancetope.ids import parse_public_id


class UndoFrames:
    user: Any

    if TYPE_CHECKING:  # BrainConsumer's

        async def send_model(self, frame: out.Reply) -> None: ...

    async def on_process_undo(self, frame: p.ProcessUndo) -> None:
        pk = parse_public_id("tp", frame.data.processId, "process")
        undone = await call_service(undo_turn, pk, user=self.user)
        data = out.ProcessUndoneData.model_validate(
            {"process": process_data(undone.process), "undone": undone.data()}
        )
        await self.send_model(out.ProcessUndone(replyTo=frame.id, data=data))

    async def on_process_unsend(self, frame: p.ProcessUnsend) -> None:
        pk = parse_public_id("tp", frame.data.processId, "process")
        message = await call_service(unsend_message, pk, frame.data.seq, user=self.user)
        data = out.ProcessUnsentData(processId=f"tp_{message.process_id}", seq=message.seq)
        await self.send_model(out.ProcessUnsent(replyTo=frame.id, data=data))
