"""`ctx.conversation`: the process's conversation, committed history plus what this call adds.

New messages are written by the lane together with consuming the pending message, in one
transaction (processes/lane/commit.py); nothing rewrites earlier messages. An undo marks the
messages of the turns it took back undone (processes/actions/undo.py): they are not read here.
"""

from __future__ import annotations

from typing import Any

from processes.capabilities import conversation_cache
from processes.models import ConversationMessage, ThinkProcess
from vancetope.llm.base import Completion, LlmMessage, ToolCall


class ConversationBuffer:
    def __init__(self, process: ThinkProcess) -> None:
        self._process = process
        self._history: tuple[LlmMessage, ...] | None = None
        self.new_messages: list[LlmMessage] = []

    def history(self) -> list[LlmMessage]:
        return [*self._committed(), *self.new_messages]

    def remember_committed(self) -> None:
        """The lane committed the new messages: keep the whole history for the next turn."""
        process = self._process
        before = self._committed()
        conversation_cache.put(
            process.pk,
            process.conversation_epoch,
            before + tuple(self.new_messages),
            process.conversation_length,
            extends=before,
        )

    def _committed(self) -> tuple[LlmMessage, ...]:
        """The stored history, read once per buffer (from the cache when it is there)."""
        if self._history is None and self._process.conversation_length == 0:
            self._history = ()  # a new process (a spawned worker) has nothing stored to read
        if self._history is None:
            process = self._process
            self._history = conversation_cache.get(
                process.pk, process.conversation_epoch, process.conversation_length
            )
            if self._history is None:
                self._history = self._load()
                conversation_cache.put(
                    process.pk,
                    process.conversation_epoch,
                    self._history,
                    process.conversation_length,
                )
        return self._history

    def _load(self) -> tuple[LlmMessage, ...]:
        """The stored messages the LLM is sent: all but those an undo took back."""
        rows = ConversationMessage.objects.filter(
            process_id=self._process.pk, undone_at__isnull=True
        ).order_by("index")
        return tuple(
            LlmMessage(
                role=row.role,  # type: ignore[arg-type]
                content=row.content,
                tool_calls=tuple(ToolCall(**call) for call in row.tool_calls),
                tool_call_id=row.tool_call_id,
            )
            for row in rows
        )

    def append(self, message: LlmMessage) -> None:
        self.new_messages.append(message)

    def append_completion(self, completion: Completion) -> None:
        self.append(
            LlmMessage(
                role="assistant",
                content=completion.text,
                tool_calls=tuple(completion.tool_calls),
            )
        )

    def rows(self, start: int) -> list[dict[str, Any]]:
        """The new messages as ConversationMessage rows (field → value, for
        fastsql.insert_values), numbered on from `start` (the stored length)."""
        return [
            {
                "process_id": self._process.pk,
                "index": start + offset,
                "role": message.role,
                "content": message.content,
                "tool_calls": [
                    {"id": call.id, "name": call.name, "arguments": call.arguments}
                    for call in message.tool_calls
                ],
                "tool_call_id": message.tool_call_id,
            }
            for offset, message in enumerate(self.new_messages)
        ]
