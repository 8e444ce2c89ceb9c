"""What a ThinkEngineContext offers an engine: typed Protocols, and the value types they speak.

Engines import this module (and `engines.context`, `engines.messages`, `engines.base`) and
nothing else of the Brain: no model, no kernel. Each Protocol is implemented by the part of the
Brain that owns the data, and the lane (`processes/lane/context_builder.py`) puts them together:

| ctx part       | Protocol        | implemented by                                          |
| -------------- | --------------- | ------------------------------------------------------- |
| `ctx.llm`      | `Llm`           | `processes/capabilities/llm.py` (`LlmAccess`)           |
| `ctx.conversation` | `Conversation` | `processes/capabilities/conversation.py`             |
| `ctx.events`   | `Events`        | `sessions_app/event_sink.py` (`EventSink`)              |
| `ctx.tools`    | `Tools`         | `vancetope/tools/dispatch.py` (`ToolBox`)               |
| `ctx.tool_health` | `ToolHealth` | `vancetope/tools/health.py` (`ToolHealthAccess`)       |
| `ctx.settings` | `Mapping`       | engine defaults ← settings cascade (vancetope/config/)  |
|                |                 | ← recipe params ← process params                        |
| `ctx.processes`| `Processes`     | `processes/capabilities/children.py` (`ChildProcesses`) |
| `ctx.inbox`    | `Inbox`         | `inbox/capability.py`, if the pool holds `inbox_post`   |
| `ctx.memory`   | `Memory`        | `vancetope/memory/capability.py` (`MemoryAccess`)       |
| `ctx.space`    | `SpaceContext`  | `spaces/capability.py`, for a thinking-space node only  |

A part that is not built yet is a `NotAvailable` (engines/context.py): touching it raises
CapabilityNotAvailable, so an engine never runs silently without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

# The LLM's vocabulary is the kernel's; engines get it from here, not from the kernel.
from vancetope.llm.base import Completion, LlmMessage, TextDelta, ToolCall, ToolSchema
from vancetope.llm.base import LlmError as ProviderError

__all__ = [
    "Completion",
    "Conversation",
    "Definitions",
    "Events",
    "Inbox",
    "Llm",
    "LlmMessage",
    "Memory",
    "ProcessView",
    "Processes",
    "ProviderError",
    "SpaceContext",
    "StructuredOutputError",
    "TextDelta",
    "ToolCall",
    "ToolHealth",
    "ToolOutcome",
    "ToolSchema",
    "Tools",
]


class ProcessView(Protocol):
    """The process row as an engine sees it: it reads the goal and owns `engine_state`.
    `engine_params` are the params it was created with; the lane stores them with every call
    too, so an engine may keep progress there (vogon's `strategyState`)."""

    @property
    def public_id(self) -> str: ...

    goal: str
    engine_state: dict[str, Any]
    engine_params: dict[str, Any]


class Definitions(Protocol):
    """Named definitions a new process's params may refer to, looked up in its project
    (`ThinkEngine.prepare_params`); implemented by `recipes_app/strategies.py`."""

    def strategy(self, ref: Any, *, field: str) -> dict[str, Any]:
        """A vogon strategy: by name (the project's, else the tenant's, else the bundled one)
        or given inline (a mapping), checked against its JSON Schema and the recipes its phases
        name; the copy to keep. A strategy that does not fit raises ParamsRefused naming the
        field (`field` + the path inside an inline strategy)."""
        ...


class StructuredOutputError(Exception):
    """The LLM did not give the structured output a step asked for, after one retry with the
    validation error. Its message names the step and the last error."""

    def __init__(self, step: str, error: str) -> None:
        super().__init__(f"step {step}: {error}")
        self.step = step
        self.error = error


class Llm(Protocol):
    """Every call may raise ProviderError (the provider failed: network, auth, rate limit).
    An engine that lets it through leaves the turn to the lane, which retries and then makes
    the process BLOCKED with the error; an engine with a fallback (zaphod's synthesizer)
    catches it. `model` asks for a model other than the configured one ("": the configured)."""

    # The model a step may fall back to when its call fails (VANCETOPE_LLM_FALLBACK_MODEL);
    # "" when none is configured.
    fallback_model: str
    # The model is a small one (the llm.modelSize setting; by default the well-known small
    # models, SmolLM2 the shipped one): an engine offers it its minimal schemas.
    small_model: bool

    def room(self, tools: list[ToolSchema] | None = None) -> int | None:
        """About how many tokens the messages of a call offering `tools` may take within the
        model's window (its budget less nothing of the conversation), or None when the window
        is unknown. Every call is fitted to its window anyway (a long message is cut in its
        middle); an engine that builds a long prompt of many parts (marvin's aggregate of
        every worker's result) uses this to give each part its share instead."""
        ...

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        *,
        step: str = "",
        model: str = "",
        force_tool: str | None = None,
    ) -> Iterator[TextDelta | ToolCall]:
        """Stream the answer; token usage is counted and the lane's boundary checked between
        deltas (a pause or stop ends the call early). `step` names the engine's step (the
        names docs/engines.md lists; a scripted provider's rules may match on it).
        `force_tool` names one of `tools` the model must call (see `structured`)."""
        ...

    def complete(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        *,
        stream_to_client: bool = True,
        step: str = "",
        model: str = "",
        force_tool: str | None = None,
    ) -> Completion:
        """The whole answer; its text streams to the session's client unless told not to."""
        ...

    def structured(
        self, messages: list[LlmMessage], schema: ToolSchema, *, step: str, model: str = ""
    ) -> dict[str, Any]:
        """Structured output through a tool call (docs/engines.md): the LLM is offered the one
        tool `schema` declares and the call is forced (`tool_choice` naming it, a grammar for
        the local model; a server that refuses the forced choice is asked once unforced); the
        call's arguments are checked against its JSON Schema. No call or invalid arguments are
        sent back once with the validation error; a second failure raises
        StructuredOutputError. Works alike with every provider."""
        ...

    def invalid(self, schema: ToolSchema, arguments: dict[str, Any]) -> str:
        """What is wrong with `arguments` of a call of `schema`'s tool, as `structured` says
        it ("" if nothing): for an engine that offers the tool beside others (frankie's
        `report_result` in its `act` step)."""
        ...


class Conversation(Protocol):
    def history(self) -> list[LlmMessage]:
        """Committed messages plus what this call appended."""
        ...

    def append(self, message: LlmMessage) -> None: ...

    def append_completion(self, completion: Completion) -> None:
        """Store what the LLM answered (text and tool calls) as the assistant's message."""
        ...


class Events(Protocol):
    """Events to the session's client (stored, numbered, pushed in order)."""

    def chat_delta(self, text: str) -> None: ...

    def chat_message(self, role: str, text: str, *, at_once: bool = False) -> None:
        """A whole message; by default sent once the turn that produced it is committed."""
        ...

    def task_tree(self, tree: dict[str, Any]) -> None: ...

    def notify(self, text: str, level: str = "info") -> None:
        """A notification for the client; `level` is info, success, warning or error."""
        ...


class ToolOutcome(Protocol):
    """What a tool call gave: `content` is what the LLM reads (the result, or "error: …")."""

    @property
    def ok(self) -> bool: ...

    @property
    def content(self) -> str: ...

    @property
    def data(self) -> Any: ...

    @property
    def error(self) -> str: ...


class Tools(Protocol):
    def schemas(self, *, safety: str | None = None) -> list[ToolSchema]:
        """The process's pool as the LLM sees it (optionally only SAFE_PROBE tools)."""
        ...

    def names(self) -> list[str]: ...

    def invoke(
        self, name: str, arguments: dict[str, Any], *, only_safety: str | None = None
    ) -> ToolOutcome: ...

    def answer(self, call: ToolCall, *, only_safety: str | None = None) -> ToolOutcome:
        """Invoke a call the LLM asked for and append the `tool` message answering it. With
        `only_safety` (a service engine's probe turn: "SAFE_PROBE"), a tool of another safety is
        refused, by name too, and the refusal is the answer the LLM reads."""
        ...


class ToolHealth(Protocol):
    """For the tool-health service engine (agrajag): the evidence and the verdict."""

    def failures(self, diagnosis_id: int) -> str:
        """The queued diagnosis's failures as one line ("" if there is none)."""
        ...

    def classify(self, error: str) -> str:
        """The synchronous checker's classification of an error (`ambiguous` if no rule)."""
        ...

    def write(self, tool: str, status: str, classification: str, evidence: str) -> None: ...

    def current(self, tool: str) -> tuple[str, str]:
        """The tool's recorded (status, classification)."""
        ...

    def finish(self, diagnosis_id: int) -> None: ...


class Processes(Protocol):
    """Child processes: spawned in the same session, in their own lanes;
    their reports come back as ParentReport messages."""

    def spawn(
        self,
        *,
        goal: str,
        recipe: str | None = None,
        params: dict[str, Any] | None = None,
        engine: str | None = None,
    ) -> str:
        """A child from a recipe (or the engine-name convention), in this process's tree and
        within its budgets; its id at once. It starts in its own lane after this call's
        commit and reports back as a ParentReport."""
        ...

    def steer(self, process_id: str, message: str) -> None:
        """A steer to one of this process's children (any other id is not found), held until
        the child can take it: a PAUSED or SUSPENDED child reads it after its resume; a
        CLOSED one takes nothing (Conflict)."""
        ...

    def stop(self, process_id: str) -> None:
        """Stop a child (and its open children); one that is CLOSED already is left as it is."""
        ...

    def list(self, status: str | None = None) -> list[dict[str, Any]]:
        """This process's children, as process objects."""
        ...

    def status(self, process_id: str) -> dict[str, Any]:
        """One child, with its lastError and how many of its messages wait."""
        ...


class Inbox(Protocol):
    def post(
        self,
        *,
        kind: str,
        title: str,
        body: str,
        options: list[str] | None = None,
        asked_by: str = "",
    ) -> str:
        """Post an item (kind OUTPUT_TEXT, APPROVAL or QUESTION) for the session's user; its
        id (inb_N). The answer comes back later as an InboxAnswer message. `asked_by`: the
        process (tp_N) whose question this is, when the engine passes a worker's on."""
        ...


class Memory(Protocol):
    """The process's memory: reads cascade session → project → group → tenant."""

    def read(self, key: str) -> str | None:
        """The narrowest valid value of `key` the process sees, or None."""
        ...

    def write(self, content: str, *, key: str | None = None, scope: str | None = None) -> str:
        """Remember `content` (scope: session, project (default), group or tenant; the last
        two for a tenant admin's processes only); the item's id (mem_N). A key already held in
        that scope is superseded, never deleted."""
        ...

    def search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        """Hybrid search over the memory and the project's documents (docs/protocol.md)."""
        ...

    def neighbours(
        self, node_id: str, types: list[str] | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """The knowledge graph's valid edges at a node (mem_N or doc_N:K) the process sees,
        of `types` (supports, contradicts, derived_from, mentions) if given: each edge with
        its `direction` (out, in) and its `other` end (id, kind, snippet, title)."""
        ...

    def edges(
        self, type: str, *, node_id: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """The valid edges of one type the process sees (at one node, if given), newest
        first, as GET /api/knowledge/edges lists them."""
        ...


class SpaceContext(Protocol):
    """A thinking-space node's prompt context (docs/spaces.md), rendered from Handoffs only."""

    def render(self) -> str:
        """Markdown for the system prompt, read fresh (the space may have moved on)."""
        ...
