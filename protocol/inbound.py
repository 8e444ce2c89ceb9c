"""Pydantic models of every frame a client sends (docs/protocol.md).

Client frames are one discriminated union on `type`; `extra="forbid"` everywhere, because an
undeclared field is a schema bug. What the Brain sends back is in `outbound.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from protocol.objects import InboxStatusName
from protocol.vocabulary import ClientType, DisconnectPolicy, Status, SuspendPolicy
from vancetope.errors import validation_problem

# Every string and JSON value a client sends is one of these. Text no database stores (NUL, a
# lone surrogate) never reaches them: the consumer refuses it where the frame is parsed
# (vancetope.jsonbody.parse_json), naming the field.
Text = str
NonEmpty = Annotated[str, Field(min_length=1)]
JsonObject = dict[str, Any]
JsonValue = Any


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Fingerprint(Strict):
    machineId: NonEmpty
    workingDir: Text = ""
    userHome: Text | None = None
    osUser: Text | None = None


class ToolSpec(Strict):
    name: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[a-zA-Z0-9_.-]+$")]
    description: Text = ""
    parameters: JsonObject = Field(default_factory=lambda: {"type": "object"})
    safety: Literal["SAFE_PROBE", "MUTATING"] = "MUTATING"
    # Running it twice has the effect of running it once: a call the Brain's stop left without
    # a result is sent again (with the same idempotencyKey) instead of asking the person.
    idempotent: bool = False


class Empty(Strict):
    pass


class Request(Strict):
    id: str | None = Field(default=None, max_length=100)


# --- data of each request ------------------------------------------------------------------------


class SessionCreateData(Strict):
    clientType: ClientType
    projectId: NonEmpty = "proj_default"
    fingerprint: Fingerprint | None = None
    onDisconnect: DisconnectPolicy | None = None
    onSuspend: SuspendPolicy | None = None
    recipe: NonEmpty | None = None
    tools: list[ToolSpec] = Field(default_factory=list)


class SessionResumeData(Strict):
    sessionId: NonEmpty
    fingerprint: Fingerprint
    sinceSeq: Annotated[int, Field(ge=0)] | None = None
    # The tools this client offers, declared with the bind itself: a task waiting for one of
    # them goes on at once, and no turn finds the session bound with no tools in between.
    tools: list[ToolSpec] = Field(default_factory=list)


class ToolsRegisterData(Strict):
    tools: list[ToolSpec]


class ToolResultData(Strict):
    callId: NonEmpty
    ok: bool
    result: JsonValue = None
    error: Text | None = None


class ChatData(Strict):
    text: NonEmpty


class ProcessCreateData(Strict):
    goal: Text = ""
    thinkEngine: NonEmpty | None = None
    recipe: NonEmpty | None = None
    params: JsonObject = Field(default_factory=dict)
    start: bool = True
    parentId: NonEmpty | None = None


class ProcessRef(Strict):
    processId: NonEmpty


class ProcessUnsendData(Strict):
    processId: NonEmpty
    seq: int = Field(ge=1, strict=True)


class ProcessSteerData(Strict):
    processId: NonEmpty
    message: NonEmpty


class ProcessListData(Strict):
    status: Status | None = None
    # user (default): processes of service recipes left out; service: only those.
    category: Literal["user", "service"] | None = None


class InboxListData(Strict):
    status: InboxStatusName = "OPEN"


class InboxAnswerData(Strict):
    itemId: NonEmpty
    # Its shape depends on the item's kind (inbox/answers.py): checked by the inbox service.
    answer: JsonObject


class InboxRef(Strict):
    itemId: NonEmpty


class MemorySearchData(Strict):
    query: NonEmpty
    k: int = Field(default=5, ge=1, le=50)
    scope: Literal["session", "project", "group", "tenant"] | None = None


class WorkflowStartData(Strict):
    workflowId: NonEmpty
    # Names and values of the workflow's inputs (checked by the workflow service: a missing
    # one is a 400 naming it).
    input: dict[str, Any] = Field(default_factory=dict)


class SpaceGetData(Strict):
    # One of them: the space, or any node of it.
    spaceId: NonEmpty | None = None
    nodeId: NonEmpty | None = None


class SpaceNodeData(Strict):
    nodeId: NonEmpty
    # The revision the client saw: a space that moved on since is a 409 and nothing changes.
    revision: int | None = Field(default=None, ge=1)


class SpaceTitleData(SpaceNodeData):
    title: NonEmpty


class SpacePromptData(Strict):
    nodeId: NonEmpty
    # The person's first message of a blank branch.
    text: NonEmpty


# --- requests ------------------------------------------------------------------------------------


class SessionCreate(Request):
    type: Literal["session-create"]
    data: SessionCreateData


class SessionResume(Request):
    type: Literal["session-resume"]
    data: SessionResumeData


class SessionClose(Request):
    type: Literal["session-close"]
    data: Empty = Field(default_factory=Empty)


class ToolsRegister(Request):
    type: Literal["tools-register"]
    data: ToolsRegisterData


class ToolResult(Request):
    type: Literal["tool-result"]
    data: ToolResultData


class Chat(Request):
    type: Literal["chat"]
    data: ChatData


class ProcessCreate(Request):
    type: Literal["process-create"]
    data: ProcessCreateData


class ProcessLifecycle(Request):
    type: Literal[
        "process-start",
        "process-pause",
        "process-resume",
        "process-stop",
        "process-reset",
        "process-get",
    ]
    data: ProcessRef


class ProcessUndo(Request):
    type: Literal["process-undo"]
    data: ProcessRef


class ProcessUncompact(Request):
    type: Literal["process-uncompact"]
    data: ProcessRef


class ProcessUnsend(Request):
    type: Literal["process-unsend"]
    data: ProcessUnsendData


class ProcessSteer(Request):
    type: Literal["process-steer"]
    data: ProcessSteerData


class ProcessList(Request):
    type: Literal["process-list"]
    data: ProcessListData = Field(default_factory=ProcessListData)


class ThinkEnginesList(Request):
    type: Literal["thinkengines-list"]
    data: Empty = Field(default_factory=Empty)


class RecipesListData(Strict):
    # Without a bound session, the project whose recipes to list.
    projectId: NonEmpty | None = None


class RecipesList(Request):
    type: Literal["recipes-list"]
    data: RecipesListData = Field(default_factory=RecipesListData)


class InboxList(Request):
    type: Literal["inbox-list"]
    data: InboxListData = Field(default_factory=InboxListData)


class InboxAnswer(Request):
    type: Literal["inbox-answer"]
    data: InboxAnswerData


class InboxDismiss(Request):
    type: Literal["inbox-dismiss"]
    data: InboxRef


class WorkflowStart(Request):
    type: Literal["workflow-start"]
    data: WorkflowStartData


class SpaceGet(Request):
    type: Literal["space-get"]
    data: SpaceGetData


class SpaceControl(Request):
    # space-fork-retry: ask the parent's agent again for a pending child's fork Handoff.
    type: Literal["space-checkpoint", "space-return", "space-fork-retry"]
    data: SpaceNodeData


class SpaceSuggestData(Strict):
    pass


class SpaceSuggest(Request):
    # The bound session's conversation becomes a space's root (if it is not one) and its
    # agent is ordered to suggest the first branches.
    type: Literal["space-suggest"]
    data: SpaceSuggestData = Field(default_factory=SpaceSuggestData)


class SpaceTitled(Request):
    type: Literal["space-split", "space-rename"]
    data: SpaceTitleData


class SpacePrompt(Request):
    # A blank branch's first prompt: admitted to that node's session as the person's chat
    # message; the client opens the node after the reply.
    type: Literal["space-prompt"]
    data: SpacePromptData


class MemorySearch(Request):
    type: Literal["memory-search"]
    data: MemorySearchData


ClientFrame = Annotated[
    SessionCreate
    | SessionResume
    | SessionClose
    | ToolsRegister
    | ToolResult
    | Chat
    | ProcessCreate
    | ProcessLifecycle
    | ProcessSteer
    | ProcessUndo
    | ProcessUncompact
    | ProcessUnsend
    | ProcessList
    | ThinkEnginesList
    | RecipesList
    | InboxList
    | InboxAnswer
    | InboxDismiss
    | WorkflowStart
    | SpaceGet
    | SpaceControl
    | SpaceSuggest
    | SpaceTitled
    | SpacePrompt
    | MemorySearch,
    Field(discriminator="type"),
]
client_frame = TypeAdapter(ClientFrame)
FRAME_TYPES = frozenset(client_frame.json_schema()["discriminator"]["mapping"])

# In docs/protocol.md, but served by parts of the Brain that are not built yet: request type → the
# part it needs (answered with a 400 saying so).
NOT_YET_AVAILABLE: dict[str, str] = {}


def describe_validation_error(error: ValidationError) -> tuple[str, str]:
    """The first problem as (field path, message), e.g. ("data.text", "Field required")."""
    path, message = validation_problem(error)
    # Union members add their tag to the path ("chat.data.text"); drop it, the type is known.
    head, _, rest = path.partition(".")
    if rest and head in FRAME_TYPES:
        path = rest
    return path, message
