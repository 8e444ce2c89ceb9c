"""The objects docs/protocol.md names (a process, a session, an inbox item, …) as pydantic models,
and the base every outgoing model shares. The frames that carry them are in `outbound.py`,
which re-exports these names; the REST views describe their bodies with the same models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from protocol.vocabulary import (
    ClientType,
    CloseReason,
    DisconnectPolicy,
    RecipeCategory,
    RecipeScope,
    SessionStatus,
    Status,
    SuspendCause,
    SuspendPolicy,
)


class Outgoing(BaseModel):
    # Every field with a default is still always sent, so the schemas say it is there.
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


def _absent_if_none(value: Any) -> bool:
    return value is None


def left_out_if_none() -> Any:
    """An optional field of an event's data: left out of the data when it is None."""
    return Field(default=None, exclude_if=_absent_if_none)


class Usage(Outgoing):
    promptTokens: int
    completionTokens: int
    # Some of the tokens are an estimate: a server that reported no usage (docs/protocol.md).
    estimated: bool


class ProcessObject(Outgoing):
    """A process (processes/presenters.py `process_data`)."""

    id: str
    sessionId: str
    parentId: str | None
    thinkEngine: str
    engineVersion: str
    recipe: str
    goal: str
    status: Status
    closeReason: CloseReason | None
    contextDrift: bool
    createdAt: str
    updatedAt: str
    usage: Usage


class LastTask(Outgoing):
    """What a listed process did last (processes/last_task.py): a task-tree node (`id`, its
    title and status) or a turn (its message's first line; RUNNING or DONE)."""

    kind: Literal["node", "turn"]
    id: str | None = None
    title: str
    status: str


class ProcessRow(ProcessObject):
    """A process of a list (`process-list`, GET /api/processes), with its last task."""

    lastTask: LastTask | None


class ConversationEntry(Outgoing):
    index: int
    role: str
    content: str
    toolCalls: list[Any]
    toolCallId: str | None
    createdAt: str


class ContextPart(Outgoing):
    """One named part of what an LLM call sent (vancetope/llm/assembly.py `Part`)."""

    name: Literal["system", "summary", "recalled", "recent", "step"]
    messages: int
    tokens: int
    leftOut: int
    cut: int


class CompactionObject(Outgoing):
    """A fold of a conversation's oldest turns into a summary (processes/lane/compaction.py):
    the calls send `summary` instead of the first `messages` messages, up to `lastIndex`."""

    id: str
    processId: str
    firstIndex: int
    lastIndex: int
    messages: int
    turns: int
    summary: str
    method: Literal["llm", "fallback"]
    model: str
    promptTokens: int
    completionTokens: int
    summaryTokens: int
    createdAt: str
    undoneAt: str | None


class LastCall(Outgoing):
    """What the last LLM call of a committed turn sent, within its model's window
    (docs/engines.md, "The context budget")."""

    step: str
    window: int | None
    budget: int | None
    maxTokens: int | None
    tools: int
    # The tools left out of the call to fit the window (their schemas past 40 % of it).
    toolsLeftOut: list[str]
    tokens: int
    counted: bool
    parts: list[ContextPart]


class ProcessDetail(ProcessObject):
    """A process with its task tree, pending count, last error and conversation
    (`process_detail`)."""

    taskTree: dict[str, Any] | None
    pending: int
    lastError: str | None
    lastCall: LastCall | None
    compaction: CompactionObject | None
    engineParams: dict[str, Any]
    conversationLength: int
    conversation: list[ConversationEntry]


class NotUndone(Outgoing):
    """Something an undone turn did that the undo leaves as it is: a client tool's call
    (`client-tool`), an inbox item answered already (`inbox-item`), a child that had ended
    (`process`)."""

    kind: str
    id: str
    text: str


class UndoneTurn(Outgoing):
    """What a `process-undo` took back (processes/actions/undo.py `Undone.data`): the turn's
    message (its `seq`, and its `text` to edit and send again), how many conversation messages
    were hidden, the processes stopped and the inbox items dismissed."""

    seq: int
    text: str
    messages: int
    stoppedProcesses: list[str]
    dismissedItems: list[str]
    notUndone: list[NotUndone]


class SessionFingerprint(Outgoing):
    machineId: str
    workingDir: str
    userHome: str | None
    osUser: str | None


class SessionObject(Outgoing):
    """A session (sessions_app/presenters.py `session_data`)."""

    id: str
    projectId: str
    clientType: ClientType
    isHuman: bool
    system: bool
    status: SessionStatus
    suspendCause: SuspendCause | None
    onDisconnect: DisconnectPolicy
    onSuspend: SuspendPolicy
    onIdle: DisconnectPolicy
    idleTimeout: int
    fingerprint: SessionFingerprint
    chatProcessId: str | None
    tools: list[str]
    lastSeq: int
    createdAt: str
    lastActivityAt: str
    closedAt: str | None


class EngineDescriptor(Outgoing):
    """A registered think engine (engines/base.py `describe`)."""

    name: str
    title: str
    description: str
    version: str
    # Other names `thinkEngine` takes for it (marvin: `deep-think`, the default process recipe).
    aliases: list[str]
    allowedTools: list[str]
    defaultSettings: dict[str, Any]


class RecipeObject(Outgoing):
    """A recipe (recipes_app/api.py `recipe_data`)."""

    id: str
    name: str
    engine: str
    title: str
    description: str
    params: dict[str, Any]
    promptPrefix: str
    allowedToolsAdd: list[str]
    allowedToolsRemove: list[str]
    category: RecipeCategory
    roles: list[str]
    # Published as an A2A agent: its card is at /a2a/<project>/<name>/.well-known/agent-card.json.
    a2a: bool
    scope: RecipeScope
    tenant: str | None
    projectId: str | None
    # The wider scopes whose recipe of the same name this one hides ("bundled", "tenant").
    shadows: list[RecipeScope]


# The inbox's kinds and statuses (inbox/models.py InboxKind, InboxStatus), spelled out here so
# that the protocol, which every app imports, imports no inbox module.
InboxKindName = Literal["OUTPUT_TEXT", "APPROVAL", "QUESTION"]
InboxStatusName = Literal["OPEN", "ANSWERED", "DISMISSED", "EXPIRED"]


class InboxItemObject(Outgoing):
    """An inbox item (inbox/presenters.py `item_data`)."""

    id: str
    kind: InboxKindName
    title: str
    body: str
    options: list[str]
    status: InboxStatusName
    answer: dict[str, Any] | None
    answeredBy: str | None
    answeredAt: str | None
    expiresAt: str | None
    # What expiry answers (null: the item expires unanswered).
    defaultAction: dict[str, Any] | None
    # The process that posted it; null for an item a system client's run posted (the brain
    # linker's APPROVAL), whose run is originRunId.
    originProcessId: str | None
    originRunId: str | None
    # The process whose question it is, when its parent posted it for it (arthur or vogon
    # passing a worker's question on); null when the poster asked.
    askedBy: str | None
    # Null until there is an answer to deliver; false with originNote when it reached no
    # process.
    originDelivered: bool | None
    originNote: str | None
    projectId: str
    createdAt: str


# Run statuses and trigger types (triggers/models.py RunStatus, TriggerType), spelled out here
# for the same reason.
RunStatusName = Literal["running", "completed", "completed_partial", "blocked", "failed"]
TriggerTypeName = Literal["user", "cron", "webhook", "workflow", "brain_linker"]


class RunTrigger(Outgoing):
    type: TriggerTypeName
    cronId: str | None = left_out_if_none()
    webhookId: str | None = left_out_if_none()
    deliveryId: str | None = left_out_if_none()
    workflowId: str | None = left_out_if_none()


class RunScope(Outgoing):
    projectId: str
    processId: str | None


class BlockedReason(Outgoing):
    taskId: str | None = left_out_if_none()
    # The blocked task's title, beside its id (a run log names the task, not only its process).
    taskTitle: str | None = left_out_if_none()
    processId: str | None = left_out_if_none()
    reason: str


class SentNotification(Outgoing):
    """One message a run sent: a `notification` (stored for the user, and a `notification`
    event to each of their open sessions)."""

    id: str
    type: Literal["notification"]
    user: str
    message: str


class RunObject(Outgoing):
    """A run log (triggers/presenters.py `run_data`)."""

    id: str
    sessionId: str | None
    clientType: str
    trigger: RunTrigger
    scope: RunScope
    startedAt: str
    finishedAt: str | None
    status: RunStatusName
    tasksExecuted: int
    tasksBlocked: int
    blockedReasons: list[BlockedReason]
    tokensUsed: int
    llmCalls: int
    notificationsSent: list[SentNotification]
    error: str | None


class NotificationObject(Outgoing):
    """A stored notification (triggers/presenters.py `notification_data`)."""

    id: str
    text: str
    level: Literal["info", "success", "warning", "error"]
    runId: str | None
    processId: str | None
    projectId: str
    read: bool
    readAt: str | None
    createdAt: str


class WorkflowTask(Outgoing):
    kind: Literal["WORKER", "USER_INPUT", "AGGREGATE"]
    title: str
    goal: str
    recipe: str | None = left_out_if_none()


class WorkflowObject(Outgoing):
    """A workflow (triggers/presenters.py `workflow_data`): its body, with its id and project."""

    id: str
    projectId: str
    name: str
    description: str
    engine: str
    goal: str
    inputs: list[str]
    tasks: list[WorkflowTask]
    source: str
    createdAt: str
    updatedAt: str


NodeStateName = Literal["dormant", "forkHandoffPending", "active", "returning", "returned"]


class ThinkingNodeObject(Outgoing):
    """A node of a thinking space (spaces/presenters.py `space_data`)."""

    id: str
    parentId: str | None
    depth: int
    sortOrder: int
    sessionId: str
    chatProcessId: str
    title: str
    state: NodeStateName
    checkpointRefreshingAt: str | None
    inheritedHandoff: str | None
    checkpointHandoff: str | None
    returnedHandoff: str | None
    createdAt: str
    updatedAt: str


class ThinkingSpaceObject(Outgoing):
    """A thinking space, whole: a client replaces its copy with the newest revision."""

    id: str
    version: Literal[1]
    revision: int
    rootNodeId: str | None
    projectId: str
    nodes: list[ThinkingNodeObject]
    createdAt: str
    updatedAt: str


class SpaceData(Outgoing):
    space: ThinkingSpaceObject
