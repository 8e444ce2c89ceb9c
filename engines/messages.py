"""Pending messages as an engine's `steer` receives them: one typed object per kind.

The lane reads a pending message row and hands the engine `parse(kind, seq, payload)`; an
engine matches on the type (`isinstance(message, ParentReport)`) instead of reading dict keys.
`prompt_text()` is what the engine's LLM sees of it (docs/protocol.md, "What an engine's LLM sees
of non-user messages"): a person's own words as they are, everything else behind a bracketed
tag a script's `match` can target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# How a process's lastError begins when it waits (BLOCKED) because its LLM provider failed
# every attempt of a turn (processes/lane/driver.py writes it; a parent reads it through
# ParentReport.provider_failed).
PROVIDER_FAILED = "the LLM provider failed: "


@dataclass(frozen=True)
class Message:
    seq: int
    text: str

    def prompt_text(self) -> str:
        return self.text


@dataclass(frozen=True)
class UserMessage(Message):
    """A chat message from the person at the session's client."""


@dataclass(frozen=True)
class Steer(Message):
    """A steer sent with process-steer (or the REST steer)."""


# The CONTROL order of a person to cancel one node of a task tree (args: nodeId).
CANCEL_NODE = "cancel-node"


@dataclass(frozen=True)
class Control(Message):
    """A message from the system or from the process to itself (a deferred goal, a
    diagnosis order, a person's order about a task-tree node); `text` names it, `args` are
    its arguments."""

    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ParentReport(Message):
    """A child reached DONE, BLOCKED, STOPPED or FAILED; `text` is its Markdown summary."""

    child_id: str = ""
    engine: str = ""
    event: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    # Why the child failed (its lastError), for a FAILED report.
    error: str = ""

    def prompt_text(self) -> str:
        return f"[report from {self.child_id} ({self.engine}): {self.event}]\n{self.text}"

    @property
    def provider_failed(self) -> bool:
        """The child waits (BLOCKED) because its LLM provider failed, not for an answer."""
        return self.event == "BLOCKED" and self.error.startswith(PROVIDER_FAILED)


@dataclass(frozen=True)
class ToolResultMessage(Message):
    """A tool's answer that arrived after the turn that asked for it."""

    call_id: str = ""
    ok: bool = True


@dataclass(frozen=True)
class InboxAnswer(Message):
    """A person's answer to an inbox item the process posted."""

    item_id: str = ""
    answer: dict[str, Any] = field(default_factory=dict)

    def prompt_text(self) -> str:
        return f"[inbox answer {self.item_id}]\n{self.text}"


@dataclass(frozen=True)
class Unblocked(Message):
    """The external event a process waited for (await_external) arrived: `key` is what it
    waited for, `text` the event (a webhook's payload as JSON)."""

    key: str = ""

    def prompt_text(self) -> str:
        return f"[unblocked by {self.key}]\n{self.text}"


PendingMessage = (
    UserMessage | Steer | Control | ParentReport | ToolResultMessage | InboxAnswer | Unblocked
)


def parse(kind: str, seq: int, payload: dict[str, Any]) -> PendingMessage:
    """The typed message of a stored pending message (kind as stored: USER, STEER, …)."""
    text = str(payload.get("text", ""))
    if kind == "USER":
        return UserMessage(seq, text)
    if kind == "STEER":
        return Steer(seq, text)
    if kind == "CONTROL":
        return Control(seq, text, args=dict(payload.get("args") or {}))
    if kind == "PARENT_REPORT":
        return ParentReport(
            seq,
            text,
            child_id=str(payload.get("childId", "")),
            engine=str(payload.get("engine", "")),
            event=str(payload.get("event", "")),
            payload=dict(payload.get("payload") or {}),
            error=str(payload.get("error", "")),
        )
    if kind == "TOOL_RESULT":
        return ToolResultMessage(
            seq, text, call_id=str(payload.get("callId", "")), ok=bool(payload.get("ok", True))
        )
    if kind == "INBOX_ANSWER":
        return InboxAnswer(
            seq,
            text,
            item_id=str(payload.get("itemId", "")),
            answer=dict(payload.get("answer") or {}),
        )
    if kind == "UNBLOCK":
        return Unblocked(seq, text, key=str(payload.get("key", "")))
    raise ValueError(f"unknown pending message kind {kind!r}")
