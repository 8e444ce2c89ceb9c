"""The inbox frames (docs/protocol.md): parse, call one inbox service, reply."""

from __future__ import annotations

from typing import Any

from gateway.frames.errors import in_frame
from gateway.frames.socket import FrameHandler, Socket
from inbox import services as inbox
from inbox.presenters import item_data
from protocol import inbound as p
from protocol import outbound as out
from vancetope.errors import BadRequest
from vancetope.service_calls import call_service

# The most items one inbox-list answers with, newest first.
LIST_LIMIT = 500


async def inbox_list(socket: Socket, frame: p.InboxList) -> None:
    def listing() -> list[dict[str, Any]]:
        rows = inbox.filtered_items(socket.user, status=frame.data.status)
        return [item_data(item) for item in rows[:LIST_LIMIT]]

    data = out.InboxData.model_validate({"items": await call_service(listing)})
    await socket.send_model(out.Inbox(replyTo=frame.id, data=data))


async def inbox_answer(socket: Socket, frame: p.InboxAnswer) -> None:
    try:
        answered = await call_service(
            inbox.do_answer, socket.user, frame.data.itemId, frame.data.answer
        )
    except BadRequest as exc:
        raise in_frame(exc) from exc
    data = out.InboxAnsweredData.model_validate(
        {"item": item_data(answered.item), "delivered": answered.delivered}
    )
    await socket.send_model(out.InboxAnswered(replyTo=frame.id, data=data))


async def inbox_dismiss(socket: Socket, frame: p.InboxDismiss) -> None:
    item = await call_service(inbox.dismiss_item, socket.user, frame.data.itemId)
    data = out.InboxItemData.model_validate({"item": item_data(item)})
    await socket.send_model(out.InboxDismissed(replyTo=frame.id, data=data))


HANDLERS: dict[str, FrameHandler] = {
    "inbox-list": inbox_list,
    "inbox-answer": inbox_answer,
    "inbox-dismiss": inbox_dismiss,
}
