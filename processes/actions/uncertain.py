"""A tool call the Brain's stop left uncertain, settled by its person.

A retried turn that meets a MUTATING call journaled as started with no result, of a tool that
does not declare it may be repeated, stops there: the call is UNCERTAIN, the process BLOCKED
with its message pending, and its person is asked (inbox/receivers.py posts an APPROVAL about
the call). The answer settles the call, once, and wakes the process: its retried turn runs the
call again (approved) or goes on as if it had run (rejected); vancetope/tools/replay.py reads
the decision.
"""

from __future__ import annotations

from processes.lane.dispatch import wake_lane
from processes.models import ThinkProcess
from processes.states import Status
from vancetope.ids import parse_public_id
from vancetope.tools.models import CallStatus, Decision, ToolCall


def settle_uncertain_call(call_id: str, *, approve: bool) -> str:
    """Record the person's decision about an UNCERTAIN call and wake its process (after the
    caller's commit); the note of the item that asked: "" when it reached the call, else why
    not (decided already, or the process is closed)."""
    pk = parse_public_id("call", call_id, "tool call")
    decision = Decision.RUN_AGAIN if approve else Decision.TREAT_AS_DONE
    decided = ToolCall.objects.filter(pk=pk, status=CallStatus.UNCERTAIN, decision="").update(
        decision=decision
    )
    process = (
        ThinkProcess.objects.filter(tool_calls__pk=pk)
        .values("pk", "status", "close_reason")
        .first()
    )
    if process is None:
        return f"{call_id} no longer exists: the answer is stored, no process reads it"
    if not decided:
        return f"{call_id} was decided already: this answer changes nothing"
    if process["status"] == Status.CLOSED:
        return f"tp_{process['pk']} is CLOSED ({process['close_reason']}): no turn runs {call_id}"
    wake_lane(process["pk"])
    return ""
