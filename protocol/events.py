"""The events the Brain sends (docs/protocol.md "Events"): the data model of each, the frame that
carries it, and how emitters build one (`event`, `event_from`). Re-exported by `outbound.py`,
where the replies are; the event store (sessions_app/events.py) refuses an event whose name has
no model here.

An optional field of an event's data is left out when it is not set.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from protocol.objects import (
    CompactionObject,
    InboxItemObject,
    Outgoing,
    RunObject,
    ThinkingSpaceObject,
    left_out_if_none,
)
from protocol.vocabulary import CloseReason, SessionStatus, Status

__all__ = [
    "ChatDeltaEvent",
    "ChatDeltaFrame",
    "ChatMessageEvent",
    "ChatMessageFrame",
    "ConversationFoldedEvent",
    "ConversationFoldedFrame",
    "EVENT_MODELS",
    "Event",
    "EventData",
    "EventFrame",
    "EventFrameBase",
    "InboxItemEvent",
    "InboxItemFrame",
    "NotificationEvent",
    "NotificationFrame",
    "ProcessStatusEvent",
    "ProcessStatusFrame",
    "RunEvent",
    "RunFrame",
    "SessionStatusEvent",
    "SessionStatusFrame",
    "SpaceStateEvent",
    "SpaceStateFrame",
    "TaskTreeEvent",
    "TaskTreeFrame",
    "ToolCallEvent",
    "ToolCallFrame",
    "UnknownEvent",
    "event",
    "event_from",
]

# An event as emitters hand it to the event store: (event name, data).
Event = tuple[str, dict[str, Any]]


class EventData(Outgoing):
    """The data of one event; `name` is the event's name on the wire."""

    name: ClassVar[str]


class ProcessStatusEvent(EventData):
    name = "process-status"
    processId: str
    status: Status
    closeReason: CloseReason | None = left_out_if_none()
    # Only ever sent as true: the session came back in another working directory.
    contextDrift: Literal[True] | None = left_out_if_none()


class ChatDeltaEvent(EventData):
    name = "chat-delta"
    processId: str
    text: str


class ChatMessageEvent(EventData):
    name = "chat-message"
    processId: str
    role: str
    text: str


class TaskTreeEvent(EventData):
    name = "task-tree"
    processId: str
    tree: dict[str, Any]


class ToolCallEvent(EventData):
    name = "tool-call"
    callId: str
    processId: str
    tool: str
    arguments: dict[str, Any]
    # For a tool registered `idempotent: true`: the same key each time the Brain sends this
    # call (a retried turn runs a call its stop left without a result again), so the client
    # can tell a repeat from a new call.
    idempotencyKey: str | None = Field(default=None, exclude_if=lambda key: key is None)


class NotificationEvent(EventData):
    name = "notification"
    text: str
    level: Literal["info", "success", "warning", "error"]
    # A stored notification (triggers/) carries its id, and its run and process if any; a
    # lane's notice about a process is not stored and has none.
    id: str | None = left_out_if_none()
    runId: str | None = left_out_if_none()
    processId: str | None = left_out_if_none()


class SessionStatusEvent(EventData):
    name = "session-status"
    status: SessionStatus


class InboxItemEvent(EventData):
    """An inbox item of the session's user was posted or changed."""

    name = "inbox-item"
    item: InboxItemObject


class SpaceStateEvent(EventData):
    name = "space-state"
    space: ThinkingSpaceObject


class ConversationFoldedEvent(EventData):
    """A process's conversation was compacted (its oldest turns folded into a summary), or a
    compaction was undone (`compaction.undoneAt` set): the chat shows the fold."""

    name = "conversation-folded"
    processId: str
    compaction: CompactionObject


class RunEvent(EventData):
    """A run of the session's user started or finished."""

    name = "run"
    run: RunObject


EVENT_MODELS: dict[str, type[EventData]] = {
    model.name: model
    for model in (
        ProcessStatusEvent,
        ChatDeltaEvent,
        ChatMessageEvent,
        TaskTreeEvent,
        ToolCallEvent,
        NotificationEvent,
        SessionStatusEvent,
        InboxItemEvent,
        RunEvent,
        SpaceStateEvent,
        ConversationFoldedEvent,
    )
}


class UnknownEvent(ValueError):
    """An event whose name has no model here: a schema bug, refused before it is stored."""


def event(data: EventData) -> Event:
    """The event as it is stored and sent: its name and its data as JSON values."""
    return (data.name, data.model_dump(mode="json"))


def event_from(name: str, data: dict[str, Any]) -> Event:
    """An event handed over as (name, data), by a kernel that does not know these models
    (the tool kernel's `tool-call`): checked against its model."""
    model = EVENT_MODELS.get(name)
    if model is None:
        raise UnknownEvent(f"no model for event {name!r}")
    return event(model.model_validate(data))


class EventFrameBase(Outgoing):
    type: Literal["event"] = "event"
    seq: int


class ProcessStatusFrame(EventFrameBase):
    event: Literal["process-status"]
    data: ProcessStatusEvent


class ChatDeltaFrame(EventFrameBase):
    event: Literal["chat-delta"]
    data: ChatDeltaEvent


class ChatMessageFrame(EventFrameBase):
    event: Literal["chat-message"]
    data: ChatMessageEvent


class TaskTreeFrame(EventFrameBase):
    event: Literal["task-tree"]
    data: TaskTreeEvent


class ToolCallFrame(EventFrameBase):
    event: Literal["tool-call"]
    data: ToolCallEvent


class NotificationFrame(EventFrameBase):
    event: Literal["notification"]
    data: NotificationEvent


class SessionStatusFrame(EventFrameBase):
    event: Literal["session-status"]
    data: SessionStatusEvent


class InboxItemFrame(EventFrameBase):
    event: Literal["inbox-item"]
    data: InboxItemEvent


class RunFrame(EventFrameBase):
    event: Literal["run"]
    data: RunEvent


class ConversationFoldedFrame(EventFrameBase):
    event: Literal["conversation-folded"]
    data: ConversationFoldedEvent


class SpaceStateFrame(EventFrameBase):
    event: Literal["space-state"]
    data: SpaceStateEvent


EventFrame = Annotated[
    ProcessStatusFrame
    | ChatDeltaFrame
    | ChatMessageFrame
    | TaskTreeFrame
    | ToolCallFrame
    | NotificationFrame
    | SessionStatusFrame
    | InboxItemFrame
    | RunFrame
    | SpaceStateFrame
    | ConversationFoldedFrame,
    Field(discriminator="event"),
]
