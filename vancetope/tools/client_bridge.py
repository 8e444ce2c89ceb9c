"""Client tools: a `tool-call` event to the session's client, its `tool-result` back.

The waiting lane holds no transaction: the call is a ToolCall row, the consumer's service
(`accept_tool_result`) moves it from PENDING once, and the lane polls the row, checking its
boundary (pause, stop, lease loss) between polls, until the timeout ends the wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import timezone

from protocol.vocabulary import SessionStatus
from vancetope.errors import Conflict, NotFound
from vancetope.ids import parse_public_id
from vancetope.tools.checker import Classification
from vancetope.tools.errors import ToolFailure
from vancetope.tools.models import CallStatus, Location, ToolCall

POLL_START = 0.02
POLL_MAX = 0.25
# A call's error when its client went away without answering.
GONE = "the client disconnected before answering"


def run_client_tool(
    call: ToolCall,
    boundary: Callable[[], None],
    emit: Callable[[str, dict[str, Any]], None],
    idempotency_key: str = "",
) -> Any:
    """Send the call to the bound client (as a `tool-call` event of its session, through
    `emit`; with its idempotency key for a tool registered `idempotent`) and wait for its
    answer; raise ToolFailure on an error answer, a timeout or a client that went away."""
    sent: dict[str, Any] = {
        "callId": call.public_id,
        "processId": f"tp_{call.process_id}",
        "tool": call.tool,
        "arguments": call.arguments,
    }
    if idempotency_key:
        sent["idempotencyKey"] = idempotency_key
    emit("tool-call", sent)
    timeout = float(settings.VANCETOPE_CLIENT_TOOL_TIMEOUT)
    deadline = time.monotonic() + timeout
    delay = POLL_START
    try:
        while True:
            row = (
                ToolCall.objects.filter(pk=call.pk)
                .values("status", "result", "error", "session__client_tools", "session__status")
                .get()
            )
            if row["status"] == CallStatus.PENDING and not _offers(
                row["session__client_tools"], row["session__status"], call.tool
            ):
                # The client went away (or took the tool back) before this row was there for
                # its disconnect to fail: nobody will answer.
                _finish(call, CallStatus.FAILED, GONE)
                continue
            if row["status"] == CallStatus.OK:
                return row["result"]
            if row["status"] != CallStatus.PENDING:
                raise ToolFailure(
                    row["error"] or f"client tool {call.tool} failed",
                    classification=_classification_of(row["error"]),
                )
            if time.monotonic() >= deadline:
                if _finish(call, CallStatus.TIMED_OUT, f"no answer within {timeout:g}s"):
                    raise ToolFailure(
                        f"client tool {call.tool} timed out: the client did not answer "
                        f"within {timeout:g}s",
                        classification=Classification.TIMEOUT,
                    )
                continue  # the answer arrived just now: read it
            boundary()
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, POLL_MAX)
    except ToolFailure:
        raise
    except BaseException:
        # Interrupted (pause, stop, shutdown, lease lost): a late answer must be refused.
        _finish(call, CallStatus.CANCELLED, "the turn was interrupted while waiting")
        raise


def _offers(client_tools: Any, session_status: str, tool: str) -> bool:
    """Whether a client bound to the session offers the tool (a suspended or closed session
    keeps its client's declarations, but has no client)."""
    if session_status != SessionStatus.OPEN:
        return False
    return any(offered.get("name") == tool for offered in client_tools or ())


def _classification_of(error: str) -> str:
    return Classification.DISCONNECTED_CLIENT if "disconnected" in error else ""


def _finish(call: ToolCall, status: CallStatus, error: str) -> bool:
    return (
        ToolCall.objects.filter(pk=call.pk, status=CallStatus.PENDING).update(
            status=status, error=error, finished_at=timezone.now()
        )
        == 1
    )


def accept_tool_result(
    session_id: int, call_id: str, *, ok: bool, result: Any = None, error: str = ""
) -> ToolCall:
    """The bound client answers a tool-call. Only an outstanding call of this session is
    accepted, and only once; everything else is refused (404 unknown or foreign, 409
    duplicate or late)."""
    pk = parse_public_id("call", call_id, "tool call")
    call = ToolCall.objects.filter(pk=pk, session_id=session_id, location=Location.CLIENT).first()
    if call is None:
        raise NotFound(f"tool call {call_id} not found in this session")
    changes: dict[str, Any] = {"finished_at": timezone.now()}
    if ok:
        changes.update(status=CallStatus.OK, result=result)
    else:
        changes.update(status=CallStatus.FAILED, error=error or "the client reported a failure")
    if ToolCall.objects.filter(pk=pk, status=CallStatus.PENDING).update(**changes) != 1:
        call.refresh_from_db()
        if call.status in {CallStatus.TIMED_OUT, CallStatus.CANCELLED}:
            raise Conflict(
                f"tool call {call_id} is no longer waiting ({call.status}); result refused",
                error="late-result",
            )
        raise Conflict(f"tool call {call_id} was already answered", error="duplicate-result")
    call.refresh_from_db()
    return call


def fail_outstanding_client_calls(session_id: int, reason: str) -> int:
    """The client went away: every call it still owes fails now, so no lane waits for the
    timeout."""
    return ToolCall.objects.filter(
        session_id=session_id, location=Location.CLIENT, status=CallStatus.PENDING
    ).update(status=CallStatus.FAILED, error=reason, finished_at=timezone.now())
