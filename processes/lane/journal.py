"""The journal of a turn: what its LLM calls answered and which tool calls it made, kept with the
pending message the turn answers, outside the turn's transaction, so that a retried turn (after
a crash, a lost lease or a failed attempt) replays them instead of repeating them.

Each call the engine makes is a step, numbered in the order it makes them. The message's
payload keeps one entry per step: an LLM completion (`{"llm": step, "text", "toolCalls",
"usage"}`, or `"malformed"` for an answer whose tool call did not parse) or a tool call
(`{"call": pk}`: the ToolCall row holds its arguments, status and result, the journal's tool
half). A retried turn's calls are answered from the entries in order, while each matches
(processes/capabilities/llm.py, vancetope/tools/replay.py); the first that does not, or the
first step with no entry, runs live, and from there the attempt writes its own entries.

Every write is fenced by the lane's lease, as the commit is: a worker that lost its lane
writes nothing (LeaseLost). The commit that consumes the message drops the journal.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from processes.lane import lease as lanes
from processes.models import PendingMessage, ThinkProcess
from sessions_app.event_sink import EventSink
from vancetope.infra import fastsql
from vancetope.llm.base import Completion, ToolCall, Usage
from vancetope.tools.models import ToolCall as ToolCallRow

# The pending message's payload keys: the journal's entries, and what the turn's attempts sent
# at once (EventSink.announced), which no retry sends again.
JOURNAL = "journal"
ANNOUNCED = "announced"

# Only while this lease holds the process: a journal write of a worker that lost its lane
# changes nothing.
_FENCED = (
    "{id} = %s AND {consumed} = %s AND "
    f"(SELECT {fastsql.col(ThinkProcess, 'lease_fence')} FROM {fastsql.table(ThinkProcess)} "
    f"WHERE {fastsql.col(ThinkProcess, 'id')} = %s) = %s"
)


def journal_enabled() -> bool:
    return bool(settings.VANCETOPE_TURN_JOURNAL)


def stripped(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as its message is kept once consumed: without the journal."""
    return {key: value for key, value in payload.items() if key not in (JOURNAL, ANNOUNCED)}


class TurnJournal:
    """The journal of one attempt at a message (built with the attempt's context)."""

    def __init__(self, message: PendingMessage, lease: lanes.Lease, events: EventSink) -> None:
        self._message = message
        self._lease = lease
        self._events = events
        self._entries: list[dict[str, Any]] = list(message.payload.get(JOURNAL) or [])
        self._step = 0
        # True while the attempt's calls are answered from the entries (none: never).
        self._replaying = bool(self._entries)
        self._calls: dict[int, ToolCallRow] | None = None
        # Whether this attempt wrote to the message (its commit then drops the journal).
        self.written = bool(self._entries) or ANNOUNCED in message.payload

    @property
    def message(self) -> PendingMessage:
        return self._message

    def take_step(self) -> int:
        step, self._step = self._step, self._step + 1
        return step

    def key(self, step: int) -> str:
        """The idempotency key of the tool call at `step`: the same in every attempt."""
        return f"tp_{self._message.process_id}.{self._message.seq}.{step}"

    def _recorded(self, step: int, kind: str) -> dict[str, Any] | None:
        if not self._replaying:
            return None
        entry = self._entries[step] if step < len(self._entries) else None
        if entry is None or kind not in entry:
            self._live_from(step)
            return None
        return entry

    def _live_from(self, step: int) -> None:
        """The attempt goes its own way from `step`: the entries from there on are not its."""
        self._replaying = False
        del self._entries[step:]

    # --- LLM completions -------------------------------------------------------------------------

    def completion(self, step: int, name: str) -> Completion | None:
        """The completion recorded at `step` for a call of the same step name, or None (the
        call runs live)."""
        entry = self._recorded(step, "llm")
        if entry is None:
            return None
        if entry["llm"] != name:
            self._live_from(step)
            return None
        prompt, completion, estimated = entry.get("usage") or (0, 0, False)
        return Completion(
            text=str(entry.get("text", "")),
            tool_calls=[ToolCall(i, n, dict(a)) for i, n, a in entry.get("toolCalls", [])],
            usage=Usage(int(prompt), int(completion), bool(estimated)),
            malformed=str(entry.get("malformed", "")),
            refused=str(entry.get("refused", "")),
        )

    def record_completion(self, step: int, name: str, completion: Completion) -> None:
        usage = completion.usage
        entry: dict[str, Any] = {
            "llm": name,
            "text": completion.text,
            "toolCalls": [[c.id, c.name, c.arguments] for c in completion.tool_calls],
            "usage": [usage.prompt_tokens, usage.completion_tokens, usage.estimated],
        }
        if completion.malformed:
            entry["malformed"] = completion.malformed
        if completion.refused:
            entry["refused"] = completion.refused
        self._append(step, entry)

    # --- tool calls (the ToolCall rows) ----------------------------------------------------------

    def recorded_call(self, step: int, tool: str, arguments: dict[str, Any]) -> ToolCallRow | None:
        """The ToolCall row recorded at `step` for the same call (tool and arguments), or
        None (the call runs live)."""
        entry = self._recorded(step, "call")
        if entry is None:
            return None
        if self._calls is None:
            pks = [found["call"] for found in self._entries if "call" in found]
            self._calls = ToolCallRow.objects.in_bulk(pks)
        row = self._calls.get(int(entry["call"]))
        if row is None or row.tool != tool or row.arguments != arguments:
            self._live_from(step)
            return None
        return row

    def record_call(self, step: int, call_pk: int) -> None:
        """Inside the transaction that creates the call's row: it is journaled with it, or
        neither is stored."""
        self._append(step, {"call": call_pk})

    # --- writing ---------------------------------------------------------------------------------

    def _append(self, step: int, entry: dict[str, Any]) -> None:
        self._replaying = False
        # A step that recorded nothing (a call that failed, and the engine went on) is an
        # empty entry: a retry runs it live.
        del self._entries[step:]
        self._entries.extend([{}] * (step - len(self._entries)))
        self._entries.append(entry)
        payload = {**self._message.payload, JOURNAL: self._entries}
        announced = self._events.announced
        if announced:
            payload[ANNOUNCED] = [[name, data] for name, data in announced]
        lease = self._lease
        changed = fastsql.update(
            PendingMessage,
            _FENCED,
            [self._message.pk, False, lease.process_id, lease.fence],
            {"payload": payload},
        )
        if changed != 1:
            raise lanes.LeaseLost(
                f"lease on tp_{lease.process_id} lost before its turn's journal was written"
            )
        self._message.payload = payload
        self.written = True
