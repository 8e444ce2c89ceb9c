"""ThinkEngineContext: built fresh for every lifecycle call; the engine's only way out.

Parts that later work fills (tools, memory, processes, inbox) raise CapabilityNotAvailable when
touched, so an engine never silently runs without them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import transaction

from engines import conversation_cache
from processes.states import CloseReason, Status
from sessions_app.events import emit_events
from vancetope.llm.base import (
    Completion,
    LlmMessage,
    LlmProvider,
    TextDelta,
    ToolCall,
    ToolSchema,
    Usage,
)

if TYPE_CHECKING:
    from processes.models import ThinkProcess


class CapabilityNotAvailable(RuntimeError):
    """An engine used a part of the context this Brain does not provide yet."""


class NotAvailable:
    def __init__(self, part: str, reason: str) -> None:
        self._part = part
        self._reason = reason

    def __getattr__(self, name: str) -> Any:
        raise CapabilityNotAvailable(
            f"ctx.{self._part}.{name} is not available in this Brain: {self._reason}"
        )

    def __repr__(self) -> str:
        return f"<ctx.{self._part}: not available>"


class ConversationBuffer:
    """The process's conversation: committed history plus what this call appends.

    New messages are written by the lane together with consuming the pending message, in one
    transaction; nothing rewrites earlier messages.
    """

    def __init__(self, process: ThinkProcess) -> None:
        self._process = process
        self._history: tuple[LlmMessage, ...] | None = None
        self.new_messages: list[LlmMessage] = []

    def history(self) -> list[LlmMessage]:
        if self._history is None:
            process = self._process
            self._history = conversation_cache.get(
                process.pk, process.conversation_epoch, process.conversation_length
            )
            if self._history is None:
                self._history = self._load()
                conversation_cache.put(process.pk, process.conversation_epoch, self._history)
        return [*self._history, *self.new_messages]

    def remember_committed(self) -> None:
        """The lane committed the new messages: keep the whole history for the next turn."""
        process = self._process
        conversation_cache.put(process.pk, process.conversation_epoch, tuple(self.history()))

    def _load(self) -> tuple[LlmMessage, ...]:
        from processes.models import ConversationMessage

        rows = ConversationMessage.objects.filter(process_id=self._process.pk).order_by("index")
        return tuple(
            LlmMessage(
                role=row.role,  # type: ignore[arg-type]
                content=row.content,
                tool_calls=tuple(ToolCall(**call) for call in row.tool_calls),
                tool_call_id=row.tool_call_id,
            )
            for row in rows
        )

    def append(self, message: LlmMessage) -> None:
        self.new_messages.append(message)

    def append_completion(self, completion: Completion) -> None:
        """Store what the LLM answered (text and tool calls) as the assistant's message."""
        self.append(
            LlmMessage(
                role="assistant",
                content=completion.text,
                tool_calls=tuple(completion.tool_calls),
            )
        )


class EventSink:
    """Events to the session's client, stored and pushed in the order the engine emits them.

    Streamed text is coalesced: a delta goes out at once when `delta_interval` seconds have
    passed since the sink last stored anything (so the first delta of a slow LLM is never held),
    otherwise it is held and joined with the next ones. Held deltas go out with the next event,
    before a tool runs (`store_held`), and at the commit. Whole messages (the assistant's
    answer, task trees) wait for the commit, so a client never sees what a crash takes back.
    """

    def __init__(
        self,
        session_id: int,
        process: ThinkProcess,
        delta_interval: float,
        opening: Callable[[], list[tuple[str, dict[str, Any]]]] | None = None,
    ) -> None:
        self._session_id = session_id
        self._process = process
        self._delta_interval = delta_interval
        # Run (inside the transaction) before the first events are stored; its events go
        # first. The lane starts its run this way (RUNNING).
        self._opening = opening
        self._held: list[tuple[str, dict[str, Any]]] = []
        self._last_stored = -math.inf
        self.after_commit: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Store and push `event` now (with any held deltas before it)."""
        self._held.append((event, data))
        self.store_held()

    def emit_after_commit(self, event: str, data: dict[str, Any]) -> None:
        self.after_commit.append((event, data))

    def chat_delta(self, text: str) -> None:
        if self._held and self._held[-1][0] == "chat-delta":
            event, data = self._held[-1]
            self._held[-1] = (event, {**data, "text": data["text"] + text})
        else:
            self._held.append(("chat-delta", {"processId": self._process.public_id, "text": text}))
        if time.monotonic() - self._last_stored >= self._delta_interval:
            self.store_held()

    def chat_message(self, role: str, text: str, *, at_once: bool = False) -> None:
        """A whole message; by default sent once the turn that produced it is committed."""
        data = {"processId": self._process.public_id, "role": role, "text": text}
        if at_once:
            self.emit("chat-message", data)
        else:
            self.emit_after_commit("chat-message", data)

    def task_tree(self, tree: dict[str, Any]) -> None:
        self.emit_after_commit("task-tree", {"processId": self._process.public_id, "tree": tree})

    def open(self) -> None:
        """Run the opening, if it has not run yet (inside the caller's transaction)."""
        opening, self._opening = self._opening, None
        if opening is not None:
            self._held[:0] = opening()

    def store_held(self) -> None:
        """Store and push the held events now (before anything else the client will see, and
        before the engine waits on an LLM or a tool)."""
        if not self._held and self._opening is None:
            return
        with transaction.atomic():
            self.open()
            held, self._held = self._held, []
            emit_events(self._session_id, held)
        self._last_stored = time.monotonic()

    def flush(self) -> None:
        """At the commit (inside its transaction): the held events, then the whole messages."""
        self.open()
        pending = [*self._held, *self.after_commit]
        self._held, self.after_commit = [], []
        emit_events(self._session_id, pending)


@dataclass
class TurnUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, usage: Usage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens


class LlmAccess:
    """Chat completion for engines: streams text deltas to the client, counts tokens, and
    checks the lane boundary between deltas (a pause or stop ends the call early)."""

    def __init__(
        self,
        provider: LlmProvider,
        events: EventSink,
        usage: TurnUsage,
        boundary: Callable[[], None],
    ) -> None:
        self.provider = provider
        self._events = events
        self._usage = usage
        self._boundary = boundary

    def stream(
        self, messages: list[LlmMessage], tools: list[ToolSchema] | None = None
    ) -> Iterator[TextDelta | ToolCall]:
        # What the turn has to say (its start, the user's message) is out before the wait.
        self._events.store_held()
        for item in self.provider.stream(messages, tools):
            if isinstance(item, Usage):
                self._usage.add(item)
                continue
            yield item
            self._boundary()

    def complete(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        *,
        stream_to_client: bool = True,
    ) -> Completion:
        completion = Completion()
        parts: list[str] = []
        for item in self.stream(messages, tools):
            if isinstance(item, TextDelta):
                parts.append(item.text)
                if stream_to_client and item.text:
                    self._events.chat_delta(item.text)
            else:
                completion.tool_calls.append(item)
        completion.text = "".join(parts)
        return completion


@dataclass
class ThinkEngineContext:
    process: ThinkProcess
    llm: LlmAccess
    conversation: ConversationBuffer
    events: EventSink
    settings: Mapping[str, Any]
    usage: TurnUsage
    # True for the session's chat process (its goal is not a question to answer).
    is_chat_process: bool = False
    tools: Any = field(
        default_factory=lambda: NotAvailable("tools", "the tool layer is not built yet")
    )
    memory: Any = field(
        default_factory=lambda: NotAvailable("memory", "memory and RAG are not built yet")
    )
    processes: Any = field(
        default_factory=lambda: NotAvailable("processes", "child processes are not built yet")
    )
    inbox: Any = field(default_factory=lambda: NotAvailable("inbox", "the inbox is not built yet"))
    # Appends a message to the process's own pending queue, so the lane runs a turn on it
    # after this call (e.g. a goal whose tools wait on the client must not block the caller).
    queue_turn: Callable[[str], None] | None = None
    # What the engine decided about the process's status after this call (None: keep going).
    outcome: Status | None = None
    close_reason: CloseReason | None = None

    def finish(self, reason: CloseReason = CloseReason.DONE) -> None:
        """The goal is reached (or failed): the process closes after this call."""
        self.outcome = Status.CLOSED
        self.close_reason = reason

    def defer_turn(self, text: str) -> None:
        """Run a turn on `text` in the process's lane after this call returns."""
        if self.queue_turn is None:
            raise CapabilityNotAvailable("ctx.defer_turn is not available in this context")
        self.queue_turn(text)

    def block(self) -> None:
        """Wait for an answer (inbox): the process goes BLOCKED after this call."""
        self.outcome = Status.BLOCKED
