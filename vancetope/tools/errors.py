from __future__ import annotations

from vancetope.errors import TurnControl


class ToolFailure(Exception):
    """A tool failed; the message is what the engine (and its LLM) reads."""

    def __init__(self, message: str, *, classification: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.classification = classification


class ClientToolRequired(TurnControl):
    """The process called a client tool while no client is bound to its session (a system
    run, or a person who went away): the lane leaves the turn and the process goes BLOCKED
    with reason `requires client tool: <name>`, its message still pending."""

    def __init__(self, tool: str) -> None:
        super().__init__(f"requires client tool: {tool}")
        self.tool = tool
        self.reason = f"requires client tool: {tool}"


# How a process's lastError reads while it waits for an external event (await_external).
WAITING_FOR_EXTERNAL = "waiting for external: "


class AwaitingExternal(TurnControl):
    """Raised by ToolBox.answer once await_external's result is in the conversation: the turn
    ends here and the lane leaves the process BLOCKED on `key` (processes/lane/driver.py)."""

    def __init__(self, key: str, reason: str = "") -> None:
        self.key = key
        self.reason = reason
        tail = f" ({reason})" if reason else ""
        super().__init__(f"{WAITING_FOR_EXTERNAL}{key}{tail}")
