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
    with reason `requires client tool: <name>`, its message still pending (ARCHITECTURE §8)."""

    def __init__(self, tool: str) -> None:
        super().__init__(f"requires client tool: {tool}")
        self.tool = tool
        self.reason = f"requires client tool: {tool}"
