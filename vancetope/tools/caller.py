"""Who a ToolBox works for, as the tool kernel knows it: the process (`Caller`), the session's
client (`ClientSide`), and where a tool's answer and events go (`Appender`, `EventOut`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from vancetope.llm.base import LlmMessage


@dataclass(frozen=True)
class Caller:
    """The process a ToolBox works for, as far as tools need to know it."""

    process_id: int
    public_id: str
    session_id: int
    project_id: int
    owner_id: int
    # Service processes (agrajag itself) never queue diagnoses: no loops of diagnosers.
    category: str = "user"
    # The user a service process acts for (its spawn's originatingUserId), or None.
    acting_user_id: int | None = None
    roles: tuple[str, ...] = ()
    allowed_add: tuple[str, ...] = ()
    allowed_remove: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClientSide:
    """The session's client as it is now: the tools it registered, and whether it is bound
    (an open, non-system session) so that its tools may be offered."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    bound: bool = False


class Appender(Protocol):
    def append(self, message: LlmMessage) -> None: ...


class EventOut(Protocol):
    def store_held(self) -> None: ...

    def emit(self, event: str, data: dict[str, Any]) -> None: ...
