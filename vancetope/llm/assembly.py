"""Fitting one LLM call into its model's context window.

An engine builds its prompt as the system prompt, the conversation so far and the step's own
messages (`ctx.prompt(*extra)`), and a long-lived process's conversation grows without end.
Sending it whole fails once it passes the window (llama.cpp's server cuts the stream; hosted
APIs answer 400) and, long before that, pays for the whole history on every call. So every call
is assembled here, within a budget:

    prompt budget = window − the call's max_tokens − the tools' schemas − a margin

from named parts, in order of priority:

- `step`: the newest turn, from the last user message on (the message being answered and the
  tool calls and results of this turn's loop): always sent, its tool results cut to their share
  if they are long;
- `system`: the system prompt (cut to half the budget only if it alone would crowd out the rest);
- `recent`: the turns before it, newest first, whole turns only (a tool call never goes without
  its result), as many as fit;
- `summary` and `recalled`: what the caller has of the turns left out (a compaction's summary,
  the earlier messages most relevant to this one), each within its share of the budget; without
  a summary, the left-out turns' first lines stand in for one (the deterministic fold).

The messages go out in this order: system, summary, recent, recalled, step (what changes from
call to call comes last, so a server can reuse what it computed for the call before).
What was sent is reported part by part with its tokens (`Assembled.report`), for the trace and
the process page. Nothing here stores or deletes anything: what is left out of a call stays in
the conversation, and in the next call's recall.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vancetope.llm.base import LlmMessage, ToolSchema
from vancetope.llm.tokens import MESSAGE_OVERHEAD, Tokens

# Shares of the prompt budget. A tool result longer than its share is sent cut (its whole text
# stays stored); the summary and the recalled messages are bounded so that the newest turns,
# which a reply most depends on, keep the rest.
TOOL_RESULT_SHARE = 0.25
SUMMARY_SHARE = 0.15
RECALLED_SHARE = 0.15
SYSTEM_SHARE = 0.5
# The tools' schemas may take this share of the window; past it, the last tools offered are
# left out of the call (arthur's whole pool is about 1,700 tokens: more than a 1,536-token
# model's window), the one a call forces never.
TOOLS_SHARE = 0.4
# The margin kept free of the window: the chat template's own tokens, and how far an estimate
# (four characters a token) may fall short of the model's tokenizer.
MARGIN_SHARE_ESTIMATED = 0.10
MARGIN_SHARE_COUNTED = 0.03
MARGIN_MIN = 16
# The answer's share of the window when the configured max_tokens would leave no room.
COMPLETION_SHARE = 0.25


@dataclass(frozen=True)
class Folded:
    """A compaction as the calls use it: its summary stands for the conversation's first
    `messages` messages (processes/lane/compaction.py)."""

    summary: str
    messages: int


@dataclass(frozen=True)
class Budget:
    """The tokens of one call: the window and what is set aside of it."""

    window: int
    completion: int
    tools: int
    margin: int

    @property
    def prompt(self) -> int:
        return max(0, self.window - self.completion - self.tools - self.margin)


@dataclass(frozen=True)
class Part:
    """One named part of what a call sent."""

    name: str
    messages: int
    tokens: int
    # Messages of this part left out of the call (older turns), and messages sent cut.
    left_out: int = 0
    cut: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "messages": self.messages,
            "tokens": self.tokens,
            "leftOut": self.left_out,
            "cut": self.cut,
        }


@dataclass
class Assembled:
    """What one call sends, and what it is made of."""

    messages: list[LlmMessage]
    parts: list[Part] = field(default_factory=list)
    budget: Budget | None = None
    # True when the tokens were counted with the model's tokenizer, not estimated.
    counted: bool = False
    # The tools the call offers (None: it offers none), and the names of those left out to fit
    # its window (fit_tools).
    tools: list[ToolSchema] | None = None
    tools_left_out: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(part.tokens for part in self.parts)

    @property
    def left_out(self) -> int:
        return sum(part.left_out for part in self.parts)

    def report(self) -> dict[str, Any]:
        """For the process page, `process-get` and the trace."""
        budget = self.budget
        return {
            "window": budget.window if budget else None,
            "budget": budget.prompt if budget else None,
            "maxTokens": budget.completion if budget else None,
            "tools": budget.tools if budget else 0,
            "toolsLeftOut": self.tools_left_out,
            "tokens": self.tokens,
            "counted": self.counted,
            "parts": [part.as_json() for part in self.parts],
        }


def fit_tools(
    tools: Sequence[ToolSchema] | None, window: int, tokens: Tokens, keep: str | None = None
) -> tuple[list[ToolSchema], list[str]]:
    """The tools a call offers within TOOLS_SHARE of the window: the first ones, as the engine
    ordered them (its own first), and `keep` (the forced one) whatever its place; and the
    names of those left out."""
    offered, left_out = [], []
    room = int(window * TOOLS_SHARE)
    for tool in tools or ():
        size = tokens.tool(tool)
        if size <= room or tool.name == keep:
            offered.append(tool)
            room -= size
        else:
            left_out.append(tool.name)
    return offered, left_out


def budget_for(
    window: int, max_tokens: int, tools: Sequence[ToolSchema] | None, tokens: Tokens
) -> Budget:
    """The call's budget. The answer gets the configured max_tokens, or a quarter of the
    window when that would leave the prompt less than three quarters of it (a 4,096-token
    max_tokens on a 2,048-token model)."""
    completion = min(max_tokens, int(window * COMPLETION_SHARE)) if max_tokens else 0
    if not completion:
        completion = int(window * COMPLETION_SHARE)
    share = MARGIN_SHARE_COUNTED if tokens.counted else MARGIN_SHARE_ESTIMATED
    margin = max(MARGIN_MIN, int(window * share))
    return Budget(window, completion, tokens.tools(tools), margin)


def assemble(
    messages: Sequence[LlmMessage],
    budget: Budget,
    tokens: Tokens,
    *,
    summary: str = "",
    folded: Sequence[LlmMessage] = (),
    recalled: Sequence[LlmMessage] = (),
) -> Assembled:
    """The messages of one call within `budget` (see the module docstring). `summary` stands
    for the history's first messages, `folded` (a compaction's): they are left out and the
    summary sent instead, if the history indeed begins with them; without `folded`, the
    summary stands in for whatever turns do not fit."""
    system, history, step = split(messages)
    covered = len(folded) if folded and history[: len(folded)] == list(folded) else 0
    if folded and not covered:
        summary = ""  # the engine sent another history than the one the summary folds
    history = history[covered:]
    limit = budget.prompt
    step, step_cut = _cut_tool_results(step, int(limit * TOOL_RESULT_SHARE), tokens)
    system_tokens = tokens.messages(system)
    if system_tokens > limit * SYSTEM_SHARE:
        system = [_cut_message(m, int(limit * SYSTEM_SHARE) // max(1, len(system)), tokens)
                  for m in system]  # fmt: skip
        system_tokens = tokens.messages(system)
    step, step_folded = _fold_exchanges(step, limit - system_tokens, tokens)
    step, step_cut = _fit_step(step, limit - system_tokens, tokens, step_cut)
    step_tokens = tokens.messages(step)
    room = limit - system_tokens - step_tokens
    history, history_cut = _cut_tool_results(history, int(limit * TOOL_RESULT_SHARE), tokens)
    turns = group_turns(history)
    sizes = [tokens.messages(turn) for turn in turns]
    kept = turns if covered else newest_turns(turns, sizes, room)
    summary_part: list[LlmMessage] = []
    recalled_part: list[LlmMessage] = []
    if covered or len(kept) < len(turns):
        # Messages are left out: room first for what stands in for them, then the turns; what
        # stands in gets what is left, up to its share (nothing, when the step took it all).
        recalled_part = _bounded(recalled, min(int(limit * RECALLED_SHARE), room), tokens)
        room -= tokens.messages(recalled_part)
        share = min(int(limit * SUMMARY_SHARE), room)
        reserved = min(share, tokens.text(summary) + 2 * MESSAGE_OVERHEAD + 40)
        if len(newest_turns(turns, sizes, room - reserved)) < len(turns):
            reserved = share  # the fold of the turns that do not fit gets the whole share
        kept = newest_turns(turns, sizes, room - reserved)
        left = [m for turn in turns[: len(turns) - len(kept)] for m in turn]
        # A compaction's summary folds its messages only: the turns left out after them are
        # folded here, by their first lines; a summary given alone stands for all left out.
        lines = fold_lines(left) if covered or not summary else ""
        fold = "\n".join(text for text in (summary, lines) if text)
        room_left = room - sum(sizes[len(turns) - len(kept) :])
        summary_part = [_summary_message(fold, covered + len(left), min(share, room_left), tokens)]
        if tokens.messages(summary_part) > room_left:
            summary_part = []  # no room even for its heading: the step took the window
    sent_history = [m for turn in kept for m in turn]
    left_out = len(history) - len(sent_history)
    parts = [Part("system", len(system), tokens.messages(system))]
    if covered or left_out:
        # The summary's `left_out`: the messages it stands for.
        parts.append(
            Part("summary", len(summary_part), tokens.messages(summary_part), covered + left_out)
        )
    cut = sum(1 for m in sent_history if id(m) in history_cut)
    recent_tokens = sum(sizes[len(turns) - len(kept) :])
    parts.append(Part("recent", len(sent_history), recent_tokens, left_out, cut))
    if covered or left_out:
        parts.append(Part("recalled", len(recalled_part), tokens.messages(recalled_part)))
    parts.append(Part("step", len(step), step_tokens, step_folded, cut=len(step_cut)))
    # The recalled turns go after the recent ones, next to the message they were found for:
    # what comes before them (system, summary, recent turns) begins every call the same way
    # between two compactions, so a server reuses what it computed for the last call.
    out = [*system, *summary_part, *sent_history, *recalled_part, *step]
    return Assembled(out, parts, budget, tokens.counted)


def split(
    messages: Sequence[LlmMessage],
) -> tuple[list[LlmMessage], list[LlmMessage], list[LlmMessage]]:
    """(system, history, step): the leading system messages; the turns before the newest; the
    newest turn, from the last user message on (the last message alone if none is a user's)."""
    head = 0
    while head < len(messages) and messages[head].role == "system":
        head += 1
    # From the end: the newest turn is short, the history long.
    start = next(
        (i for i in range(len(messages) - 1, head - 1, -1) if messages[i].role == "user"),
        max(head, len(messages) - 1),
    )
    return list(messages[:head]), list(messages[head:start]), list(messages[start:])


def group_turns(history: Sequence[LlmMessage]) -> list[list[LlmMessage]]:
    """Whole turns, each from a user message to the next (what comes before the first user
    message is a turn of its own): a turn is sent or left out whole, so an assistant's tool
    call never goes without its result."""
    turns: list[list[LlmMessage]] = []
    for message in history:
        if message.role == "user" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def fold_lines(left_out: Sequence[LlmMessage], width: int = 120) -> str:
    """The deterministic stand-in for a summary: each left-out user message's first line."""
    lines = []
    for message in left_out:
        if message.role == "user" and message.content.strip():
            first = message.content.strip().splitlines()[0]
            lines.append(f"- {first[:width]}")
    return "\n".join(lines)


def _summary_message(text: str, count: int, limit: int, tokens: Tokens) -> LlmMessage:
    head = f"[{count} earlier messages are not shown. What they said, in short:]\n"
    message = LlmMessage(role="system", content=head + text if text else head.strip())
    return _cut_message(message, limit, tokens, keep="head")


def newest_turns(
    turns: list[list[LlmMessage]], sizes: list[int], room: int, *, at_least: int = 0
) -> list[list[LlmMessage]]:
    """The newest of `turns` (whose tokens are `sizes`) that fit in `room`, in order; the
    newest `at_least` whatever their size (compaction keeps the newest turn)."""
    count = 0
    for size in reversed(sizes):
        if count >= at_least and size > room:
            break
        room -= size
        count += 1
    return turns[len(turns) - count :]


def _bounded(messages: Sequence[LlmMessage], limit: int, tokens: Tokens) -> list[LlmMessage]:
    """As many of `messages` (best first) as fit in `limit`."""
    shown: list[LlmMessage] = []
    for message in messages:
        size = tokens.message(message)
        if size > limit:
            break
        limit -= size
        shown.append(message)
    return shown


def _cut_tool_results(
    messages: list[LlmMessage], limit: int, tokens: Tokens
) -> tuple[list[LlmMessage], set[int]]:
    """Tool results over `limit` tokens sent cut, with a note; the ids of the cut messages."""
    out: list[LlmMessage] = []
    cut: set[int] = set()
    for message in messages:
        if message.role == "tool" and tokens.message(message) > limit:
            message = _cut_message(message, limit, tokens)
            cut.add(id(message))
        out.append(message)
    return out, cut


def _fold_exchanges(
    step: list[LlmMessage], room: int, tokens: Tokens
) -> tuple[list[LlmMessage], int]:
    """A tool loop's turn that outgrows `room` (frankie's, a marvin worker's: one message and
    many tool calls): its oldest exchanges (an assistant's tool calls and their results) are
    folded into one note of what was called and what came back, first, until the rest fits; the
    message it answers and the newest exchange always stay. Returns the step and how many
    messages were folded."""
    if len(step) < 3 or tokens.messages(step) <= room:
        return step, 0
    exchanges: list[list[LlmMessage]] = []
    for message in step[1:]:
        if message.role == "tool" and exchanges:
            exchanges[-1].append(message)
        else:
            exchanges.append([message])
    for count in range(1, len(exchanges)):
        folded = [m for exchange in exchanges[:count] for m in exchange]
        kept = [m for exchange in exchanges[count:] for m in exchange]
        candidate = [step[0], _exchanges_note(folded), *kept]
        if tokens.messages(candidate) <= room or count == len(exchanges) - 1:
            return candidate, len(folded)
    return step, 0


def _exchanges_note(folded: list[LlmMessage]) -> LlmMessage:
    """What folded exchanges did, a line a call: its tool, arguments and the result's start."""
    results = {m.tool_call_id: m.content for m in folded if m.role == "tool"}
    lines = []
    for message in folded:
        for call in message.tool_calls:
            said = " ".join(results.get(call.id, "(no result)").split())
            arguments = json.dumps(call.arguments, ensure_ascii=False)[:120]
            lines.append(f"- {call.name} {arguments} → {said[:160]}")
        if message.role == "assistant" and message.content.strip() and not message.tool_calls:
            lines.append(f"- said: {' '.join(message.content.split())[:160]}")
    head = f"[Earlier in this task, {len(folded)} messages, in short:]"
    return LlmMessage(role="assistant", content="\n".join([head, *lines]))


def _fit_step(
    step: list[LlmMessage], room: int, tokens: Tokens, cut: set[int]
) -> tuple[list[LlmMessage], set[int]]:
    """The newest turn always goes, whole if it fits; if not, its longest messages are cut
    until it does, so that no request exceeds the window."""
    step = list(step)
    while step and tokens.messages(step) > room:
        longest = max(range(len(step)), key=lambda i: tokens.message(step[i]))
        over = tokens.messages(step) - room
        target = max(0, tokens.message(step[longest]) - over)
        shorter = _cut_message(step[longest], target, tokens)
        if tokens.message(shorter) >= tokens.message(step[longest]):
            break  # nothing left to cut
        step[longest] = shorter
        cut.add(id(shorter))
    return step, cut


CUT_NOTE = (
    "\n[… {cut} of {total} characters cut here to fit the model's context window; the whole "
    "text is kept: ask for a narrower part of it (fewer lines, a search) to read the rest …]\n"
)


def _cut_message(message: LlmMessage, limit: int, tokens: Tokens, keep: str = "ends") -> LlmMessage:
    """`message` with its content cut to about `limit` tokens: the head and the tail kept
    (keep="ends"; a command's output says most at its start and its end) or the head only."""
    size = tokens.message(message)
    if size <= limit or not message.content:
        return message
    text = message.content
    # Characters per token of this very text, so the cut lands near the limit with any tokenizer.
    ratio = len(text) / max(1, tokens.text(text))
    note_chars = len(CUT_NOTE) + 12
    keep_chars = max(0, int((limit - (size - tokens.text(text))) * ratio) - note_chars)
    if keep_chars >= len(text):
        return message
    note = CUT_NOTE.format(cut=len(text) - keep_chars, total=len(text))
    if keep == "head":
        content = text[:keep_chars] + note
    else:
        head = keep_chars // 2
        content = text[:head] + note + text[len(text) - (keep_chars - head) :]
    return LlmMessage(
        role=message.role,
        content=content,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
    )
