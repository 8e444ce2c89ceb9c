"""What a frame handler sees of the socket it answers on (gateway/consumer.py implements it)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from protocol import outbound as out
from sessions_app.models import Session
from vancetope.errors import BrainError

if TYPE_CHECKING:
    from gateway.frames.steers import SteerQueue


class Socket(Protocol):
    user: Any
    # The session bound to this socket (session-create, session-resume), if any.
    session_id: int | None
    # The socket's queue of process-steer frames (gateway/frames/steers.py).
    steers: SteerQueue
    # Replies of control turns still on (gateway/frames/spaces.py), cancelled on disconnect.
    control_tasks: set[asyncio.Future[None]]

    async def send_model(self, frame: out.Reply) -> None: ...

    async def send_error(self, request_id: str | None, exc: BrainError) -> None: ...

    def bound_session_id(self) -> int:
        """The bound session's id, or a 409 when none is bound."""
        ...

    async def session(self) -> Session: ...

    async def bind(self, session: Session, last_seq: int) -> None: ...

    async def unbind(self) -> None: ...

    async def catch_up(self) -> None: ...


# A frame's handler: the socket it came on and the frame, parsed (protocol/inbound.py).
FrameHandler = Callable[[Socket, Any], Awaitable[None]]
