"""Pydantic models of every frame the Brain sends (docs/protocol.md); the objects in them are in
`objects.py` and the events (their data models and frames) in `events.py`, re-exported here.

A reply carries `replyTo` and is sent by the consumer's `send_model`; an event carries `seq`,
and its data is built by `event(...)` from its model here, by every emitter. The event store
(sessions_app/events.py) refuses an event whose name has no model, so docs/protocol.md and the code
cannot drift apart. The REST views describe their bodies with the same object models.

Fields are declared in the order the wire carries them. Every field of a reply is on the wire,
`null` included; an optional field of an event's data is left out when it is not set.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

# The events, re-exported: emitters import them from here, as the replies.
from protocol.events import *  # noqa: F403
from protocol.events import EventFrame
from protocol.objects import (
    CompactionObject,
    EngineDescriptor,
    InboxItemObject,
    Outgoing,
    ProcessDetail,
    ProcessObject,
    ProcessRow,
    RecipeObject,
    SessionObject,
    SpaceData,
    UndoneTurn,
    left_out_if_none,
)
from protocol.objects import ConversationEntry as ConversationEntry
from protocol.objects import NotificationObject as NotificationObject
from protocol.objects import RunObject as RunObject
from protocol.objects import SessionFingerprint as SessionFingerprint
from protocol.objects import ThinkingSpaceObject as ThinkingSpaceObject
from protocol.objects import Usage as Usage
from protocol.objects import WorkflowObject as WorkflowObject
from vancetope.memory.presenters import SearchResultObject

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


class ProcessUncompactedData(Outgoing):
    process: ProcessObject
    compaction: CompactionObject


class ProcessUncompacted(Reply):
    type: Literal["process-uncompacted"] = "process-uncompacted"
    data: ProcessUncompactedData


class ProcessUnsentData(Outgoing):
    processId: str
    seq: int


class ProcessUnsent(Reply):
    type: Literal["process-unsent"] = "process-unsent"
    data: ProcessUnsentData


class ProcessListData(Outgoing):
    processes: list[ProcessRow]


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


class Space(Reply):
    type: Literal["space"] = "space"
    data: SpaceData


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
    | ProcessUncompacted
    | ProcessUnsent
    | ProcessList
    | Process
    | ThinkEngines
    | Recipes
    | Inbox
    | InboxAnswered
    | InboxDismissed
    | WorkflowStarted
    | Space
    | MemoryResults
    | ErrorFrame
    | EventFrame,
    Field(discriminator="type"),
]
# Every frame the Brain sends, for those who check frames (tests, clients in Python).
server_frame = TypeAdapter(ServerFrame)
