"""The process object of docs/protocol.md, shared by the WebSocket and REST interfaces."""

from __future__ import annotations

from typing import Any

from processes.last_task import last_task
from processes.models import Compaction, ConversationMessage, ThinkProcess
from protocol.objects import CompactionObject
from protocol.outbound import ConversationFoldedEvent, Event, event
from protocol.vocabulary import iso


def process_data(process: ThinkProcess) -> dict[str, Any]:
    return {
        "id": process.public_id,
        "sessionId": f"sess_{process.session_id}",
        "parentId": f"tp_{process.parent_id}" if process.parent_id else None,
        "thinkEngine": process.think_engine,
        "engineVersion": process.engine_version,
        "recipe": process.recipe_name,
        "goal": process.goal,
        "status": process.status,
        "closeReason": process.close_reason or None,
        "contextDrift": process.context_drift,
        "createdAt": iso(process.created_at),
        "updatedAt": iso(process.updated_at),
        "usage": {
            "promptTokens": process.prompt_tokens,
            "completionTokens": process.completion_tokens,
            "estimated": process.usage_estimated,
        },
    }


def compaction_data(compaction: Compaction) -> dict[str, Any]:
    """The compaction object of docs/protocol.md."""
    return {
        "id": compaction.public_id,
        "processId": f"tp_{compaction.process_id}",
        "firstIndex": compaction.first_index,
        "lastIndex": compaction.last_index,
        "messages": compaction.messages,
        "turns": compaction.turns,
        "summary": compaction.summary,
        "method": compaction.method,
        "model": compaction.model,
        "promptTokens": compaction.prompt_tokens,
        "completionTokens": compaction.completion_tokens,
        "summaryTokens": compaction.summary_tokens,
        "createdAt": iso(compaction.created_at),
        "undoneAt": iso(compaction.undone_at) if compaction.undone_at else None,
    }


def folded_event(compaction: Compaction) -> Event:
    """The `conversation-folded` event of a compaction written or undone (docs/protocol.md)."""
    shown = CompactionObject.model_validate(compaction_data(compaction))
    return event(ConversationFoldedEvent(processId=f"tp_{compaction.process_id}", compaction=shown))


def active_compaction(process_id: int) -> Compaction | None:
    """The compaction the calls of a process use: the newest one not undone."""
    found = Compaction.objects.filter(process_id=process_id, undone_at__isnull=True)
    return found.order_by("-last_index").first()


def process_row(process: ThinkProcess) -> dict[str, Any]:
    """A process of a list (a row of `last_task.with_last_turn`): with its last task."""
    return {**process_data(process), "lastTask": last_task(process)}


def process_detail(process: ThinkProcess, *, messages_limit: int | None = None) -> dict[str, Any]:
    """The process with its task tree, pending count, last error and conversation (without
    the messages an undo took back).

    The conversation is read after the row; a turn that committed in between would show its
    messages beside the row's older status and pending count. Only the messages the row counts
    are shown, so the detail is one consistent moment."""
    conversation = ConversationMessage.objects.filter(
        process_id=process.pk, undone_at__isnull=True, index__lt=process.conversation_length
    ).order_by("-index")
    if messages_limit is not None:
        conversation = conversation[:messages_limit]
    rows = sorted(conversation, key=lambda row: row.index)
    return {
        **process_data(process),
        "taskTree": process.engine_state.get("taskTree"),
        "pending": process.waiting,
        "lastError": process.last_error or None,
        # What the last LLM call sent, part by part with tokens (docs/engines.md, "The
        # context budget"); null before a call of a model whose window is known.
        "lastCall": process.last_call,
        # The compaction the calls use (its summary stands for the messages it folded).
        "compaction": compaction_data(found) if (found := active_compaction(process.pk)) else None,
        "engineParams": process.engine_params,
        "conversationLength": process.conversation_length,
        "conversation": [
            {
                "index": row.index,
                "role": row.role,
                "content": row.content,
                "toolCalls": row.tool_calls,
                "toolCallId": row.tool_call_id or None,
                "createdAt": iso(row.created_at),
            }
            for row in rows
        ],
    }
