"""The inbox's frames of the WebSocket consumer (PROTOCOL.md, second stage): parse, call one
inbox service, reply. A mixin of BrainConsumer (sessions_app/consumers.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inbox import services as inbox
from inbox.presenters import item_data
from sessions_app.protocol import inbound as p
from sessions_app.protocol import outbound as out
from sessions_app.service_calls import call_service
from vancetope.errors import BadRequest

# The most items one inbox-list answers with, newest first.
LIST_LIMIT = 500


class InboxFrames:
    user: Any

    if TYPE_CHECKING:  # BrainConsumer's

        async def send_model(self, frame: out.Reply) -> None: ...

    async def on_inbox_list(self, frame: p.InboxList) -> None:
        def listing() -> list[dict[str, Any]]:
            rows = inbox.filtered_items(self.user, status=frame.data.status)
            return [item_data(item) for item in rows[:LIST_LIMIT]]

        data = out.InboxData.model_validate({"items": await call_service(listing)})
        await self.send_model(out.Inbox(replyTo=frame.id, data=data))

    async def on_inbox_answer(self, frame: p.InboxAnswer) -> None:
        try:
            answered = await call_service(
                inbox.do_answer, self.user, frame.data.itemId, frame.data.answer
            )
        except BadRequest as exc:
            raise in_frame(exc) from exc
        data = out.InboxAnsweredData.model_validate(
            {"item": item_data(answered.item), "delivered": answered.delivered}
        )
        await self.send_model(out.InboxAnswered(replyTo=frame.id, data=data))

    async def on_inbox_dismiss(self, frame: p.InboxDismiss) -> None:
        item = await call_service(inbox.dismiss_item, self.user, frame.data.itemId)
        data = out.InboxItemData.model_validate({"item": item_data(item)})
        await self.send_model(out.InboxDismissed(replyTo=frame.id, data=data))


def in_frame(exc: BadRequest) -> BadRequest:
    """A field the service names (`answer.decision`) as the frame spells it
    (`data.answer.decision`)."""
    field = getattr(exc, "field", None)
    if field is None:
        return exc
    error = BadRequest(f"data.{exc.message}", error=exc.error)
    error.field = f"data.{field}"  # type: ignore[attr-defined]
    return error
