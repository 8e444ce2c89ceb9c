"""Pydantic models of every frame the Brain sends (PROTOCOL.md); the objects in them are in
`objects.py`, re-exported here.

A reply carries `replyTo` and is sent by the consumer's `send_model`; an event carries `seq`,
and its data is built by `event(...)` from its model here, by every emitter. The event store
(sessions_app/events.py) refuses an event whose name has no model, so PROTOCOL.md and the code
cannot drift apart. The REST views describe their bodies with the same object models.

Fields are declared in the order the wire carries them. Every field of a reply is on the wire,
`null` included; an optional field of an event's data is left out when it is not set.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, TypeAdapter

from processes.states import CloseReason, Status
from sessions_app.models import SessionStatus
from sessions_app.protocol.objects import ConversationEntry as ConversationEntry
from sessions_app.protocol.objects import (
    EngineDescriptor,
    InboxItemObject,
    Outgoing,
    ProcessDetail,
    ProcessObject,
    RecipeObject,
    RunObject,
    SessionObject,
    UndoneTurn,
    left_out_if_none,
)
from sessions_app.protocol.objects import NotificationObject as NotificationObject
from sessions_app.protocol.objects import SessionFingerprint as SessionFingerprint
from sessions_app.protocol.objects import Usage as Usage
from sessions_app.protocol.objects import WorkflowObject as WorkflowObject
from vancetope.memory.presenters import SearchResultObject

# An event as emitters hand it to the event store: (event name, data).
Event = tuple[str, dict[str, Any]]


# --- events --------------------------------------------------------------------------------------


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


EventFrame = Annotated[
    ProcessStatusFrame
    | ChatDeltaFrame
    | ChatMessageFrame
    | TaskTreeFrame
    | ToolCallFrame
    | NotificationFrame
    | SessionStatusFrame
    | InboxItemFrame
    | RunFrame,
    Field(discriminator="event"),
]


# --- replies -------------------------------------------------------------------------------------


class Reply(Outgoing):
    # Each reply names its own type; declared here so that it comes first on the wire.
    type: str
    replyTo: str | None = None


class SessionCreatedData(Outgoing):
    session: SessionObject
    chatProcessId: str


class SessionCreated(Reply):
    type: Literal["session-created"] = "session-created"
    data: SessionCreatedData


class SessionResumedData(Outgoing):
    session: SessionObject
    processes: list[ProcessObject]
    missed: list[EventFrame]


class SessionResumed(Reply):
    type: Literal["session-resumed"] = "session-resumed"
    data: SessionResumedData


class SessionClosedData(Outgoing):
    session: SessionObject


class SessionClosed(Reply):
    type: Literal["session-closed"] = "session-closed"
    data: SessionClosedData


class ToolsRegisteredData(Outgoing):
    count: int


class ToolsRegistered(Reply):
    type: Literal["tools-registered"] = "tools-registered"
    data: ToolsRegisteredData


class PendingData(Outgoing):
    """A message was queued for the process as its `seq` (what `process-unsend` names);
    `pending` of its messages now wait."""

    processId: str
    pending: int
    seq: int


class ChatAccepted(Reply):
    type: Literal["chat-accepted"] = "chat-accepted"
    data: PendingData


class ProcessSteered(Reply):
    type: Literal["process-steered"] = "process-steered"
    data: PendingData


class ProcessData(Outgoing):
    process: ProcessObject


class ProcessChanged(Reply):
    """A process was created, or a lifecycle call went through: the process as it is now."""

    type: Literal[
        "process-created",
        "process-started",
        "process-paused",
        "process-resumed",
        "process-stopped",
        "process-reset",
    ]
    data: ProcessData


class ProcessUndoneData(Outgoing):
    process: ProcessObject
    undone: UndoneTurn


class ProcessUndone(Reply):
    type: Literal["process-undone"] = "process-undone"
    data: ProcessUndoneData


class ProcessUnsentData(Outgoing):
    processId: str
    seq: int


class ProcessUnsent(Reply):
    type: Literal["process-unsent"] = "process-unsent"
    data: ProcessUnsentData


class ProcessListData(Outgoing):
    processes: list[ProcessObject]


class ProcessList(Reply):
    type: Literal["process-list"] = "process-list"
    data: ProcessListData


class ProcessDetailData(Outgoing):
    process: ProcessDetail


class Process(Reply):
    type: Literal["process"] = "process"
    data: ProcessDetailData


class ThinkEnginesData(Outgoing):
    engines: list[EngineDescriptor]


class ThinkEngines(Reply):
    type: Literal["thinkengines"] = "thinkengines"
    data: ThinkEnginesData


class RecipesData(Outgoing):
    recipes: list[RecipeObject]


class Recipes(Reply):
    type: Literal["recipes"] = "recipes"
    data: RecipesData


class InboxData(Outgoing):
    items: list[InboxItemObject]


class Inbox(Reply):
    type: Literal["inbox"] = "inbox"
    data: InboxData


class InboxAnsweredData(Outgoing):
    item: InboxItemObject
    # Whether the answer reached the process that posted the item (item.originNote says why
    # not).
    delivered: bool


class InboxAnswered(Reply):
    type: Literal["inbox-answered"] = "inbox-answered"
    data: InboxAnsweredData


class InboxItemData(Outgoing):
    item: InboxItemObject


class InboxDismissed(Reply):
    type: Literal["inbox-dismissed"] = "inbox-dismissed"
    data: InboxItemData


class WorkflowStartedData(Outgoing):
    process: ProcessObject
    runId: str


class WorkflowStarted(Reply):
    type: Literal["workflow-started"] = "workflow-started"
    data: WorkflowStartedData


class MemoryResultsData(Outgoing):
    results: list[SearchResultObject]


class MemoryResults(Reply):
    type: Literal["memory-results"] = "memory-results"
    data: MemoryResultsData


class ErrorData(Outgoing):
    code: int
    error: str
    message: str
    # The offending field of a frame that broke its schema ("data.text").
    field: str | None = None
    # A 429's seconds until the limit has room again; only in a 429.
    retryAfter: int | None = left_out_if_none()


class ErrorFrame(Reply):
    type: Literal["error"] = "error"
    data: ErrorData


ServerFrame = Annotated[
    SessionCreated
    | SessionResumed
    | SessionClosed
    | ToolsRegistered
    | ChatAccepted
    | ProcessSteered
    | ProcessChanged
    | ProcessUndone
    | ProcessUnsent
    | ProcessList
    | Process
    | ThinkEngines
    | Recipes
    | Inbox
    | InboxAnswered
    | InboxDismissed
    | WorkflowStarted
    | MemoryResults
    | ErrorFrame
    | EventFrame,
    Field(discriminator="type"),
]
# Every frame the Brain sends, for those who check frames (tests, clients in Python).
server_frame = TypeAdapter(ServerFrame)
