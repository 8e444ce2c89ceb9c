"""A retried turn's tool calls: answered from the journal, run again, or asked about.

The lane journals each tool call of a turn (processes/lane/journal.py): its ToolCall row is
created with its journal entry, before the tool runs, and holds its result once it answered.
When the turn is retried (the Brain stopped, the lane was lost, an attempt failed), the engine
makes the same calls again, and each that matches its journal entry is decided here:

- answered (OK, FAILED, REFUSED, TIMED_OUT): the recorded result, without running the tool;
- started with no result (PENDING, or CANCELLED by an interrupt while its client had it): it
  may have run. A SAFE_PROBE tool runs again; a tool that declares it may be repeated (MCP's
  `idempotentHint`, a client tool registered `idempotent: true`, a server tool so registered)
  runs again with the same idempotency key; any other is UNCERTAIN, and the turn stops there
  until its person decides (UncertainCall: the process goes BLOCKED with an inbox APPROVAL);
- UNCERTAIN and decided: approved, it runs again; rejected, the turn goes on as if it had run.

A tool whose effect is on the turn alone (await_external: `turn_local`) runs again whatever
its row says, so that its effect is made again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.utils import timezone

from vancetope.errors import TurnControl
from vancetope.tools.manifest import ToolManifest
from vancetope.tools.models import CallStatus, Decision, Safety
from vancetope.tools.models import ToolCall as ToolCallRow
from vancetope.tools.results import ToolResult, as_text, failed, refused

# Started, and no result recorded: whether the tool ran is not known.
STARTED = frozenset({CallStatus.PENDING, CallStatus.CANCELLED})
TREATED_AS_DONE = (
    "this call may have run before the Brain stopped; its result is not known, and the person "
    "said to treat it as done (do not run it again unless asked)"
)


class CallJournal(Protocol):
    """The journal of the turn attempt a ToolBox works in (processes/lane/journal.py)."""

    def take_step(self) -> int: ...

    def key(self, step: int) -> str: ...

    def recorded_call(
        self, step: int, tool: str, arguments: dict[str, Any]
    ) -> ToolCallRow | None: ...

    def record_call(self, step: int, call_pk: int) -> None: ...


@dataclass(frozen=True)
class Step:
    """A tool call's step of its turn's journal (index -1: no journal, outside a turn)."""

    index: int = -1
    # The row the journal recorded at this step for the same call, when the call runs again
    # on it; None for a live call.
    row: ToolCallRow | None = None
    # The journal's answer, when the call does not run.
    answered: ToolResult | None = None


def step_of(
    journal: CallJournal, tool: str, arguments: dict[str, Any], manifest: ToolManifest | None
) -> Step:
    """The next step of the turn for this call: answered from the journal, to run again on its
    recorded row, or live (raises UncertainCall when its person must decide first)."""
    index = journal.take_step()
    row = journal.recorded_call(index, tool, arguments)
    if row is None:
        return Step(index)
    answered = decide(row, manifest)
    if answered is not None:
        return Step(index, answered=answered)
    return Step(index, row=row)


class UncertainCall(TurnControl):
    """A MUTATING call the Brain's stop left without a result, which may not be repeated
    blindly: the lane leaves the turn, its message pending, and the process goes BLOCKED
    until its person decides (an inbox APPROVAL: run it again, or treat it as done)."""

    def __init__(self, call: ToolCallRow) -> None:
        self.call = call
        self.question = question_of(call)
        super().__init__(self.question)


def question_of(call: ToolCallRow) -> str:
    return (
        f"`{call.tool} {_brief(call.arguments)}` may have run before the Brain stopped: "
        "approve to run it again, reject to treat it as done, or stop the process"
    )


def _brief(arguments: Any, limit: int = 120) -> str:
    text = str(arguments)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def may_repeat(manifest: ToolManifest | None) -> bool:
    """Whether a call that may have run can run again without asking anyone (a tool no
    longer offered is not known to be repeatable)."""
    return manifest is not None and (manifest.safety == Safety.SAFE_PROBE or manifest.idempotent)


def decide(row: ToolCallRow, manifest: ToolManifest | None) -> ToolResult | None:
    """The result a retried call gets from its row, or None when it runs again (on the same
    row, with the same idempotency key); raises UncertainCall when its person must decide.
    `manifest`: the tool as the process's pool offers it now (None: not offered now; a call
    that ran is answered all the same)."""
    if manifest is not None and manifest.turn_local:
        return None
    status = row.status
    if status == CallStatus.OK:
        return ToolResult(True, as_text(row.result), data=row.result, call_id=row.public_id)
    if status == CallStatus.UNCERTAIN:
        if row.decision == Decision.RUN_AGAIN:
            return None
        if row.decision == Decision.TREAT_AS_DONE:
            _settled_as_done(row)
            return ToolResult(True, TREATED_AS_DONE, call_id=row.public_id)
        raise UncertainCall(row)
    if status in STARTED:
        if may_repeat(manifest):
            return None
        ToolCallRow.objects.filter(pk=row.pk, status=status).update(status=CallStatus.UNCERTAIN)
        row.status = CallStatus.UNCERTAIN
        raise UncertainCall(row)
    # FAILED, REFUSED, TIMED_OUT: the LLM read this error before, and reads it again.
    if status == CallStatus.REFUSED:
        return refused(row.error, row.classification, row.public_id)
    return failed(row.error, row.classification, row.public_id)


def _settled_as_done(row: ToolCallRow) -> None:
    ToolCallRow.objects.filter(pk=row.pk, status=CallStatus.UNCERTAIN).update(
        status=CallStatus.OK, result={"treatedAsDone": True}, finished_at=timezone.now()
    )


def run_again(row: ToolCallRow) -> ToolCallRow:
    """The row of a call that runs again: PENDING, its error cleared, its key kept."""
    ToolCallRow.objects.filter(pk=row.pk).update(
        status=CallStatus.PENDING, error="", classification="", result=None, finished_at=None
    )
    row.status, row.error, row.classification = CallStatus.PENDING, "", ""
    return row
