"""A process's conversation as the process page shows it: each message with who speaks
(webui/speakers.py), its text as sanitised Markdown, the tool calls it made as blocks (the
name, the arguments as a small table, the result folded beneath), and the older turns folded
so a long chat is not a page of thousands of pixels."""

from __future__ import annotations

import json
from typing import Any

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

from webui.speakers import speaker_of

# The messages shown open; older ones are folded under "N earlier messages".
RECENT = 8
# An argument value longer than this is cut in the table (the whole value is its title).
ARGUMENT_CHARS = 240
MARKDOWN_EXTENSIONS = ["fenced_code", "tables", "sane_lists"]
# nh3's default allow-list without images: a page must not fetch what a model's text names.
ALLOWED_TAGS = nh3.ALLOWED_TAGS - {"img"}


def render_markdown(text: str) -> SafeString:
    """Markdown to HTML, then cleaned by nh3 (ammonia's allow-list: no script, no event
    handlers, no javascript: links, no images), so a model's or a person's text cannot run in
    the page nor make it fetch anything."""
    html = markdown.markdown(text, extensions=MARKDOWN_EXTENSIONS, output_format="html")
    return mark_safe(nh3.clean(html, tags=ALLOWED_TAGS))  # noqa: S308 - nh3 has just sanitised it


def argument_text(value: Any) -> str:
    """One argument as a person reads it: strings as they are, lists joined, the rest short."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(isinstance(part, str | int | float) for part in value):
        text = ", ".join(str(part) for part in value)
    elif isinstance(value, bool | int | float) or value is None:
        text = json.dumps(value)
    else:
        text = "; ".join(f"{key}: {argument_text(part)}" for key, part in _items(value))
    return text if len(text) <= ARGUMENT_CHARS else text[: ARGUMENT_CHARS - 1] + "…"


def _items(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [(str(key), part) for key, part in value.items()]
    return [(str(index + 1), part) for index, part in enumerate(value)]


def tool_block(call: dict[str, Any], results: dict[str, str]) -> dict[str, Any]:
    arguments = call.get("arguments") or {}
    rows = _items(arguments) if isinstance(arguments, dict | list) else [("value", arguments)]
    return {
        "id": call.get("id", ""),
        "name": call.get("name", "?"),
        "arguments": [(key, argument_text(value)) for key, value in rows],
        "result": results.get(str(call.get("id", ""))),
    }


def turns(detail: dict[str, Any], *, is_chat: bool) -> dict[str, list[dict[str, Any]]]:
    """The conversation of `process_detail` as `earlier` (folded) and `recent` turns."""
    messages = detail["conversation"]
    # A tool message is its call's result: shown folded under the call, not on its own.
    results = {
        str(message["toolCallId"]): message["content"] or ""
        for message in messages
        if message["role"] == "tool" and message["toolCallId"]
    }
    called = {
        str(call.get("id", "")) for message in messages for call in message["toolCalls"] or []
    }
    shown: list[dict[str, Any]] = []
    seen_user = False
    for message in messages:
        if message["role"] == "tool" and str(message["toolCallId"]) in called:
            continue
        speaker = speaker_of(
            message["role"],
            message["content"] or "",
            process_id=detail["id"],
            is_chat=is_chat,
            first=message["role"] == "user" and not seen_user,
        )
        seen_user = seen_user or message["role"] == "user"
        shown.append(
            {
                "index": message["index"],
                "kind": speaker.kind,
                "label": speaker.label,
                "text": message["content"] or "",
                "toolCalls": [tool_block(call, results) for call in message["toolCalls"] or []],
                "createdAt": message["createdAt"],
            }
        )
    cut = max(len(shown) - RECENT, 0)
    return {"earlier": shown[:cut], "recent": shown[cut:]}
