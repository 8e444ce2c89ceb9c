"""Who speaks in a conversation, as the web UI labels it.

A process's conversation stores every message an engine's LLM read as role `user`: the
person's own words, but also a worker's goal, a `[control: …]` order, a child's report, an
inbox answer, the event an await ended with. Shown as the person's bubble they would put words
in the person's mouth, so each gets the label of its bracketed tag (the tags are
`engines/messages.py`'s `prompt_text()` and the thinking-space notices). The interactive page
applies the same rules in `webui/static/webui/speakers.js`; a test holds the two together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The kinds a message is shown as, each with its CSS class `speaker-<kind>`.
PERSON = "person"  # the person's own words in their chat
ASSISTANT = "assistant"  # the chat's (or a worker's) answer
GOAL = "goal"  # the first words a worker process was given: its goal
CONTROL = "control"  # an order of the system or of the person's buttons: [control: …]
REPORT = "report"  # a child process reported: [report from tp_N (engine): EVENT]
INBOX_ANSWER = "inbox-answer"  # a person's inbox answer, passed on: [inbox answer inb_N]
EVENT = "event"  # the external event an await ended with: [unblocked by KEY]
SPACE = "space"  # a thinking-space notice: [thinking: node_N returned] …
TOOL = "tool"  # a tool's result
SYSTEM = "system"  # the system prompt

# The tag at the start of a message, and what it is shown as.
TAGS: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"^\[control: ([^\]\n]+)\]"), CONTROL, "control: {0}"),
    (re.compile(r"^\[report from (tp_\d+)[^\]\n]*: (\w+)\]"), REPORT, "report of {0}: {1}"),
    (re.compile(r"^\[inbox answer (inb_\d+)\]"), INBOX_ANSWER, "inbox answer {0}"),
    (re.compile(r"^\[unblocked by ([^\]\n]+)\]"), EVENT, "event {0}"),
    (re.compile(r"^\[thinking: ([^\]\n]+)\]"), SPACE, "space: {0}"),
]


@dataclass(frozen=True)
class Speaker:
    kind: str
    label: str


def speaker_of(role: str, text: str, *, process_id: str, is_chat: bool, first: bool) -> Speaker:
    """How one message of a process's conversation is labelled. `is_chat`: the process is its
    session's chat process (where `user` can be the person); `first`: the first `user`
    message of a worker, its goal."""
    if role == "assistant":
        return Speaker(ASSISTANT, "brain" if is_chat else f"{process_id} answers")
    if role == "tool":
        return Speaker(TOOL, "tool result")
    if role == "system":
        return Speaker(SYSTEM, "system prompt")
    for pattern, kind, label in TAGS:
        match = pattern.match(text)
        if match:
            return Speaker(kind, label.format(*match.groups()))
    if not is_chat:
        return Speaker(GOAL, f"goal of {process_id}") if first else Speaker(CONTROL, "steer")
    return Speaker(PERSON, "you")
