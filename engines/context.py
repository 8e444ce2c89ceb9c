"""ThinkEngineContext: built fresh for every lifecycle call; the engine's only way out.

Its parts are typed by the Protocols of engines/capabilities.py; the lane builds it
(processes/lane/context_builder.py). Parts later work fills (processes, inbox, memory) are
`NotAvailable`: touching one raises CapabilityNotAvailable, so an engine never silently runs
without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engines.capabilities import (
    Conversation,
    Events,
    Inbox,
    Llm,
    LlmMessage,
    Memory,
    Processes,
    ProcessView,
    SpaceContext,
    ToolHealth,
    Tools,
)


class CapabilityNotAvailable(RuntimeError):
    """An engine used a part of the context this Brain does not provide (yet, or here)."""


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


class Outcome(StrEnum):
    """What an engine decided about its process after a call (the lane applies it)."""

    BLOCKED = "BLOCKED"  # waits for an answer (a report, an inbox answer)
    CLOSED = "CLOSED"  # finished; see Finish


class Finish(StrEnum):
    DONE = "DONE"  # the goal was reached
    FAILED = "FAILED"  # the goal cannot be reached


@dataclass
class TurnUsage:
    """Tokens spent by this call, across every LLM call it made, and how many calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    # Some call's server reported no usage: its tokens are an estimate (vancetope/llm/).
    estimated: bool = False
    # What the last call sent, part by part with tokens, when its model's window is known
    # (vancetope/llm/assembly.py); the commit keeps it as the process's lastCall.
    last_call: dict[str, Any] | None = None

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _not_built(part: str, by: str) -> Any:
    return field(default_factory=lambda: NotAvailable(part, f"{by} is not built yet"))


def _not_here(part: str, why: str) -> Any:
    return field(default_factory=lambda: NotAvailable(part, why))


@dataclass
class ThinkEngineContext:
    process: ProcessView
    llm: Llm
    conversation: Conversation
    events: Events
    settings: Mapping[str, Any]
    usage: TurnUsage
    tools: Tools
    # The user a service process acts for (its spawn job's `originatingUserId`: whose tool
    # failed); None for every other process. Tools such as tool_probe_as_user run as them.
    acting_user_id: int | None = None
    tool_health: ToolHealth = _not_built("tool_health", "tool health outside agrajag")
    processes: Processes = _not_built("processes", "child processes outside a lane")
    # Set by the lane for a process whose tool pool holds inbox_post (top-level recipes).
    inbox: Inbox = _not_here("inbox", "inbox_post is not in this process's tool pool")
    memory: Memory = _not_built("memory", "memory and RAG")
    # Set by the lane for a thinking-space node's chat process: its Handoffs join the system
    # prompt of every LLM call (None: an ordinary process, whose prompt is unchanged).
    space: SpaceContext | None = None
    # Appends a message to the process's own pending queue, so the lane runs a turn on it
    # after this call (e.g. a goal whose tools wait on the client must not block the caller).
    queue_turn: Callable[[str], None] | None = None
    # What the engine decided about the process's status after this call (None: keep going).
    outcome: Outcome | None = None
    finish_reason: Finish | None = None
    # Why a FAILED finish failed: the process's lastError, and its parent's report says it.
    error: str = ""
    # The external key a BLOCKED outcome waits for (await_external), stored with the status.
    external_key: str = ""

    def system_prompt(self) -> str:
        """The prompt prefix: the recipe's, or else the engine's default system prompt; for a
        thinking-space node, then its space's context, rendered anew for every call."""
        prefix = str(self.settings.get("promptPrefix") or self.settings.get("systemPrompt", ""))
        if self.space is None:
            return prefix
        return "\n\n".join(part for part in (prefix, self.space.render()) if part)

    def prompt(self, *extra: LlmMessage) -> list[LlmMessage]:
        """The system prompt (if any), the conversation so far, then `extra`."""
        system = self.system_prompt()
        head = [LlmMessage(role="system", content=system)] if system else []
        return [*head, *self.conversation.history(), *extra]

    def finish(self, reason: Finish = Finish.DONE, *, error: str = "") -> None:
        """The goal is reached (or failed, saying why): the process closes after this call."""
        self.outcome = Outcome.CLOSED
        self.finish_reason = reason
        self.error = error

    def block(self) -> None:
        """Wait for an answer: the process goes BLOCKED after this call."""
        self.outcome = Outcome.BLOCKED

    def block_on_external(self, key: str, reason: str) -> None:
        """Wait for an external event of `key` (a webhook's unblock_tasks): BLOCKED after this
        call, `reason` its lastError."""
        self.outcome = Outcome.BLOCKED
        self.external_key = key
        self.error = reason

    def defer_turn(self, text: str) -> None:
        """Run a turn on `text` in the process's lane after this call returns."""
        if self.queue_turn is None:
            raise CapabilityNotAvailable("ctx.defer_turn is not available in this context")
        self.queue_turn(text)
