from __future__ import annotations


class ToolFailure(Exception):
    """A tool failed; the message is what the engine (and its LLM) reads."""

    def __init__(self, message: str, *, classification: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.classification = classification
