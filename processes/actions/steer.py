"""Steering: a message from a person (chat, steer) appended to a process's pending queue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from processes import signals
from processes.actions import lifecycle
from processes.actions.pending import insert_pending, take_seqs
from processes.lane.dispatch import wake_lane
from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.queries import chat_process_of, check_changeable, forget_chat_process
from processes.states import WAKE_ON_MESSAGE, Call, CloseReason, Status, check_call, is_allowed
from sessions_app.models import Session, SessionStatus
from vancetope.errors import Conflict, NotFound
from vancetope.infra import fastsql
from vancetope.ratelimit import MESSAGES, RateLimited, hit, refusal, take

# What a steer reads of the process row it takes its seqs on (the checks below, a spaces node's
# marker in its params, the seqs and the count of waiting messages), and of its session: not
# the recipe snapshot, the engine's state or the client's tools, decoded for nothing.
STEERED = (
    "id",
    "session_id",
    "status",
    "close_reason",
    "next_pending_seq",
    "consumed_count",
    "engine_params",
    "run_owner_id",
)
STEERED_IN = ("id", "owner_id", "status", "chat_process_id")


@dataclass(frozen=True)
class Steered:
    message: PendingMessage
    pending: int


def steer_process(
    process_id: int, text: str, kind: PendingKind = PendingKind.STEER, *, user: Any = None
) -> Steered:
    """Append a pending message; wake the lane unless the process waits for resume. With
    `user`, a process the user may not see is not found (and nothing changes)."""
    return steer_many(process_id, [text], kind, user=user)[0]


def steer_many(
    process_id: int,
    texts: list[str],
    kind: PendingKind = PendingKind.STEER,
    *,
    user: Any = None,
    chat_session: int | None = None,
) -> list[Steered]:
    """Append several pending messages in order, in one transaction: all or none (a burst
    of steers from one socket costs one transaction, not one each). `chat_session`: they are
    the chat of this session's client, so the process must be its chat process and the session
    OPEN."""
    with transaction.atomic():
        # A refusal below rolls back the seqs taken here. The session is locked after the
        # process (as a lane's commit locks them), its activity noted.
        process = take_seqs(process_id, len(texts), names=STEERED)
        if process is None:
            raise NotFound(f"process tp_{process_id} not found")
        [process.session] = fastsql.update_returning(
            Session,
            "{id} = %s",
            [process.session_id],
            {"last_activity_at": timezone.now()},
            names=STEERED_IN,
        )
        if user is not None:
            check_changeable(process, user)
        session = process.session
        if chat_session is not None:
            if process.session_id != chat_session or session.chat_process_id != process_id:
                forget_chat_process(chat_session)
                raise Conflict(f"session sess_{chat_session} has no chat process")
            if session.status != SessionStatus.OPEN:
                raise Conflict(f"session {session.public_id} is {session.status}")
        if chat_session is not None and not is_allowed(
            Call.STEER, process.status, process.close_reason
        ):
            raise Conflict(chat_refusal(process.public_id, process.status, process.close_reason))
        check_call(Call.STEER, process.status, process.close_reason, label=process.public_id)
        lifecycle.check_session_allows(process, Call.STEER)
        if kind in (PendingKind.USER, PendingKind.STEER):
            # A receiver refuses with a Conflict, which rolls back the seqs taken above.
            signals.person_message.send(ThinkProcess, process=process)
        messages = insert_pending(process, kind, [{"text": text} for text in texts])
        if process.status in WAKE_ON_MESSAGE:
            wake_lane(process_id)
    # Each steer's reply says how many were pending once it was appended.
    before = process.waiting - len(messages)
    return [Steered(message, before + n) for n, message in enumerate(messages, start=1)]


def steer_as(
    user: Any, process_id: int, texts: list[str]
) -> tuple[list[Steered], RateLimited | None]:
    """Steers a person sent (WebSocket, REST), counted against the user's message limit
    (VANCETOPE_RATE_CHAT): as many as it lets through now are queued, in order, as
    `steer_many` queues them; the rest are refused with the returned 429 and not queued."""
    allowed = take(MESSAGES, str(user.pk), len(texts))
    steered = steer_many(process_id, texts[:allowed], user=user) if allowed else []
    refused = refusal(MESSAGES, str(user.pk)) if allowed < len(texts) else None
    return steered, refused


def chat_refusal(process_id: str, status: str, close_reason: str) -> str:
    """Why a chat message cannot go to the chat process now, and what the person can do (the
    `vance chat` commands; the WebSocket calls are named beside them)."""
    if status == Status.INIT:
        return (
            f"the chat process {process_id} has not started (INIT): "
            f"/start it (process-start) to chat"
        )
    if status == Status.SUSPENDED:
        return (
            f"the chat process {process_id} is SUSPENDED: /resume it (process-resume), "
            f"or /reset to start it over"
        )
    shown = f"CLOSED/{close_reason}" if close_reason else "CLOSED"
    if close_reason in {CloseReason.STOPPED, CloseReason.FAILED}:
        return (
            f"the chat process {process_id} is {shown}: /reset it (process-reset) to start "
            f"over, or start a new session (vance chat --new)"
        )
    return f"the chat process {process_id} is {shown}: start a new session (vance chat --new)"


def send_chat(session_id: int, text: str, *, user: Any = None) -> Steered:
    """A chat message from the session's client goes to the session's chat process. With
    `user` (the client's), it counts against the user's message limit: over it, a 429 and
    nothing queued."""
    if user is not None:
        hit(MESSAGES, str(user.pk))
    process_id = chat_process_of(session_id)
    if process_id is None:
        raise Conflict(f"session sess_{session_id} has no chat process")
    [steered] = steer_many(process_id, [text], PendingKind.USER, chat_session=session_id)
    return steered
