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
