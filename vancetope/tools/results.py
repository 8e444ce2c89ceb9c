"""A tool's result as the ToolCall row stores it and as the LLM reads it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings


def jsonable(data: Any) -> Any:
    try:
        json.dumps(data)
    except TypeError:
        return str(data)
    return data


def as_text(data: Any) -> str:
    limit = int(settings.VANCETOPE_TOOL_RESULT_MAX_CHARS)
    text = data if isinstance(data, str) else json.dumps(jsonable(data), ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"… [cut at {limit} characters]"


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    # What the LLM reads: the result as text, or "error: …".
    content: str
    data: Any = None
    error: str = ""
    classification: str = ""
    call_id: str = ""


def refused(error: str, classification: str, call_id: str) -> ToolResult:
    """A call that never ran (outside the pool, arguments invalid), as the LLM reads it."""
    return ToolResult(
        False, f"error: {error}", error=error, classification=classification, call_id=call_id
    )


def failed(error: str, classification: str, call_id: str) -> ToolResult:
    """A call that ran (or was sent) and failed, as the LLM reads it."""
    text = f"error ({classification}): {error}"
    return ToolResult(False, text, error=error, classification=classification, call_id=call_id)
