"""Compaction: a long conversation's oldest turns folded into a summary, in the lane, after
the commit of the turn whose call came near its model's window.

A call that is assembled within its window (vancetope/llm/assembly.py) leaves out the oldest
turns once the conversation outgrows it, turn by turn. That works, but every call then sends a
different beginning, so no server can reuse what it computed for the last one (llama.cpp
evaluates the whole prompt again: 12 s a turn instead of 1.5 s for SmolLM2 on two cores), and
what is left out is only remembered by its first lines. A compaction instead folds the oldest
turns at once into a summary written by the model (step `compact`), so that the newest turns
fill no more than KEEP_SHARE of the room they have: the calls after it begin the same way
(system, summary, then the turns) until the turns fill their room again.

It runs after the commit of the turn that made it due (its call's recent turns filled
COMPACT_AT of their room, or it left turns out), in the lane that commit kept for it, so it
never runs beside a turn of the same process, and a message that arrives meanwhile waits for it
and is then driven as usual. No message is deleted: a Compaction row holds the summary and the
range of messages it covers; an undo of a folded turn marks it undone (processes/actions/
undo.py) and the next call that comes near the window folds anew. When the model cannot write
the summary (a provider failure, an empty answer), the fold is deterministic: the goal, the
previous summary and the folded turns' first lines (method `fallback`).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import F

from engines.context import TurnUsage
from processes.capabilities.recall import index_folded, recall_index
from processes.lane import lease as lanes
from processes.lane.context_builder import Prepared, build_context, engine_of
from processes.lane.interrupts import TurnInterrupted, interrupt_is_fresh
from processes.models import Compaction, ConversationMessage, ThinkProcess
from processes.presenters import active_compaction, folded_event
from processes.queries import load_process
from processes.states import Status
from sessions_app.events import emit_events
from vancetope.errors import TurnControl
from vancetope.llm.assembly import (
    RECALLED_SHARE,
    SUMMARY_SHARE,
    fold_lines,
    group_turns,
    newest_turns,
)
from vancetope.llm.base import LlmError, LlmMessage
from vancetope.llm.tokens import Tokens
from vancetope.memory.capability import MemoryAccess

log = logging.getLogger(__name__)

# The recent turns may fill this share of the room they have in a call (the budget less the
# system prompt, the step and the shares of the summary and of the recalled turns) before a
# compaction is due after the turn's commit (or when a call had to leave turns out).
COMPACT_AT = 0.85
# A compaction folds the oldest turns until the newest fill no more than this share of that
# room: the calls after it have room to grow for a while before the next one.
KEEP_SHARE = 0.4
# The most `compact` calls one compaction makes (each folds a chunk that fits the window into
# the running summary); what is left after them is folded by first lines.
MAX_CHUNKS = 8

SYSTEM = (
    "You summarise a conversation so that it can go on without its earlier messages. Keep "
    "every fact, name, number, code, decision, instruction and open question the person gave, "
    "and what was answered. Write plain sentences, no headings, at most {words} words."
)


def due(last_call: dict[str, Any] | None) -> bool:
    """Whether a turn whose last call sent `last_call` (Assembled.report) makes a compaction
    due: the call left turns out, or its recent turns filled COMPACT_AT of their room."""
    if not last_call or not last_call.get("budget"):
        return False
    parts = {part["name"]: part for part in last_call["parts"]}
    recent = parts.get("recent", {})
    if recent.get("leftOut"):
        return True
    return bool(recent.get("tokens", 0) > COMPACT_AT * turns_room(last_call))


def turns_room(last_call: dict[str, Any]) -> int:
    """The tokens the recent turns have in a call like `last_call`: its budget less its system
    prompt, its step and the shares the summary and the recalled turns may take."""
    parts = {part["name"]: part for part in last_call["parts"]}
    budget = int(last_call["budget"])
    fixed = sum(parts.get(name, {}).get("tokens", 0) for name in ("system", "step"))
    return max(0, budget - fixed - int(budget * (SUMMARY_SHARE + RECALLED_SHARE)))


def compact(process_id: int, keeper: lanes.LeaseKeeper) -> Compaction | None:
    """Compact the process's conversation in the lane its last commit kept for it (`keeper`);
    None when nothing is to be folded, or a pause or stop came first (the next turn that
    comes near the window finds it due again)."""
    try:
        process = load_process(process_id)
        if process.status == Status.CLOSED or interrupt_is_fresh(
            process.interrupt, process.interrupt_at
        ):
            return None  # closed, or a pause or stop waits for the lane: it goes first
        return _compact(process, keeper)
    except (TurnInterrupted, lanes.LeaseLost):
        return None
    except Exception:
        # The turn is committed; a compaction that failed is tried again when the next turn
        # comes near the window, and the calls meanwhile fit by leaving turns out.
        log.exception("compaction of tp_%s failed", process_id)
        return None


def _compact(process: ThinkProcess, keeper: lanes.LeaseKeeper) -> Compaction | None:
    engine = engine_of(process)
    prepared = build_context(engine, process, keeper, queue_turn=lambda text: None)
    llm = prepared.llm
    budget = llm.budget(None)
    if budget is None:
        return None  # the window is no longer known (a changed setting): nothing to fit
    history = prepared.conversation.history()
    indexes = list(
        ConversationMessage.objects.filter(process_id=process.pk, undone_at__isnull=True)
        .order_by("index")
        .values_list("index", flat=True)
    )
    if len(indexes) != len(history):
        return None  # a turn committed meanwhile: the next one finds it due again
    previous = active_compaction(process.pk)
    covered = previous.messages if previous is not None else 0
    tokens = llm.tokens()
    room = turns_room(process.last_call) if process.last_call else budget.prompt // 2
    fold = _oldest_turns(history[covered:], tokens, int(room * KEEP_SHARE))
    if not fold:
        return None
    summary, method = _summarise(process, prepared.ctx, previous, fold, tokens, budget.prompt)
    usage: TurnUsage = prepared.ctx.usage
    with transaction.atomic():
        held = ThinkProcess.objects.filter(
            pk=process.pk, lease_owner=keeper.lease.owner, lease_fence=keeper.lease.fence
        ).update(
            prompt_tokens=F("prompt_tokens") + usage.prompt_tokens,
            completion_tokens=F("completion_tokens") + usage.completion_tokens,
            llm_calls=F("llm_calls") + usage.llm_calls,
            # The calls' kept compaction and recall index (context_builder, recall) are by
            # (epoch, folds): the next turn reads the new ones.
            folds=F("folds") + 1,
        )
        if held != 1:
            return None
        folded = Compaction.objects.create(
            process=process,
            first_index=indexes[covered],
            last_index=indexes[covered + len(fold) - 1],
            messages=covered + len(fold),
            turns=len(group_turns(fold)),
            summary=summary,
            method=method,
            model=llm.provider.model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            summary_tokens=tokens.text(summary),
        )
        _tell(prepared, folded, fold, indexes[covered : covered + len(fold)])
    if prepared.llm.recall is not None:
        # The next turn's recall finds the index of the folded turns made (off its path).
        state = (process.conversation_epoch, process.folds + 1)
        recall_index(process.pk, state, history[: folded.messages])
    return folded


def _oldest_turns(unfolded: list[LlmMessage], tokens: Tokens, keep_room: int) -> list[LlmMessage]:
    """The messages of the oldest turns to fold: all but the newest turns that fit in
    `keep_room` (the newest turn always stays)."""
    turns = group_turns(unfolded)
    sizes = [tokens.messages(turn) for turn in turns]
    kept = newest_turns(turns, sizes, keep_room, at_least=1)
    return [m for turn in turns[: len(turns) - len(kept)] for m in turn]


def _tell(prepared: Prepared, folded: Compaction, fold: list[LlmMessage], at: list[int]) -> None:
    """In the compaction's transaction: its turns into the session's memory (recall, unless
    the llm.recall setting is off), and the session's clients told (`conversation-folded`)."""
    process = prepared.ctx.process
    memory = prepared.ctx.memory
    assert isinstance(memory, MemoryAccess)  # what build_context sets
    if prepared.llm.recall is not None:  # the llm.recall setting is on
        index_folded(memory, process.public_id, fold, at)
    emit_events(folded.process.session_id, [folded_event(folded)])


def _summarise(
    process: ThinkProcess,
    ctx: Any,
    previous: Compaction | None,
    fold: list[LlmMessage],
    tokens: Tokens,
    prompt_budget: int,
) -> tuple[str, str]:
    """The new summary: the model folds `fold` into the previous summary, a chunk that fits
    its window at a time; (summary, method)."""
    limit = int(prompt_budget * SUMMARY_SHARE)
    words = max(20, int(limit * 0.6))
    summary = previous.summary if previous is not None else ""
    chunks = _chunks(fold, tokens, prompt_budget // 2 - limit)
    try:
        for chunk in chunks[:MAX_CHUNKS]:
            asked = [
                LlmMessage(role="system", content=SYSTEM.format(words=words)),
                LlmMessage(role="user", content=_ask(process.goal, summary, chunk)),
            ]
            answer = ctx.llm.complete(asked, stream_to_client=False, step="compact").text.strip()
            if not answer:
                raise LlmError("the model wrote an empty summary")
            summary = answer
    except TurnControl:
        raise
    except LlmError as failed:
        log.warning("compaction of %s: %s; folded by first lines", process.public_id, failed)
        return _fallback(process.goal, previous, fold), "fallback"
    rest = [m for chunk in chunks[MAX_CHUNKS:] for m in chunk]
    if rest:
        summary = "\n".join((summary, fold_lines(rest)))
    return summary, "llm"


def _fallback(goal: str, previous: Compaction | None, fold: list[LlmMessage]) -> str:
    parts = [f"Goal: {goal}" if goal else "", previous.summary if previous else ""]
    parts.append(fold_lines(fold))
    return "\n".join(part for part in parts if part)


def _ask(goal: str, summary: str, chunk: list[LlmMessage]) -> str:
    transcript = "\n".join(f"{m.role}: {m.content}" for m in chunk if m.content)
    head = f"The goal: {goal}\n\n" if goal else ""
    so_far = f"The summary so far:\n{summary}\n\n" if summary else ""
    return f"{head}{so_far}The messages to add to it:\n{transcript}\n\nWrite the new summary."


def _chunks(fold: list[LlmMessage], tokens: Tokens, limit: int) -> list[list[LlmMessage]]:
    """`fold` in chunks of whole turns of at most `limit` tokens (a turn larger than that is a
    chunk of its own, which the call's assembly cuts to fit)."""
    chunks: list[list[LlmMessage]] = []
    size = 0
    for turn in group_turns(fold):
        turn_size = tokens.messages(turn)
        if not chunks or size + turn_size > limit:
            chunks.append([])
            size = 0
        chunks[-1].extend(turn)
        size += turn_size
    return chunks
