"""Steer frames of the WebSocket consumer (PROTOCOL.md `process-steer`): queued, applied in
batches in order, each answered. A mixin of BrainConsumer (sessions_app/consumers.py)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from processes.actions import steer as steering
from sessions_app.protocol import inbound as p
from sessions_app.protocol import outbound as out
from sessions_app.service_calls import call_service
from vancetope.errors import BrainError
from vancetope.ids import parse_public_id

log = logging.getLogger(__name__)


def as_brain_error(exc: Exception, what: str) -> BrainError:
    """The error a client is told: a BrainError as it is; anything else is logged here and
    reported as an internal error."""
    if isinstance(exc, BrainError):
        return exc
    log.error(what, exc_info=exc)
    return BrainError("internal error; see the Brain's log")


@dataclass(frozen=True)
class _Steer:
    request_id: str | None
    public_id: str
    pk: int
    message: str


class SteerFrames:
    user: Any
    _steering: asyncio.Task[None] | None = None

    if TYPE_CHECKING:  # BrainConsumer's

        async def send_model(self, frame: out.Reply) -> None: ...

        async def send_error(self, request_id: str | None, exc: BrainError) -> None: ...

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._steers: list[_Steer] = []

    async def on_process_steer(self, frame: p.ProcessSteer) -> None:
        """Queued: the socket reads on while a batch is applied (see _apply_steers)."""
        pk = parse_public_id("tp", frame.data.processId, "process")
        self._steers.append(_Steer(frame.id, frame.data.processId, pk, frame.data.message))
        if self._steering is None or self._steering.done():
            self._steering = asyncio.ensure_future(self._apply_steers())

    async def _apply_steers(self) -> None:
        """Apply the queued steers in order. Steers that arrive while one batch is applied go
        together in the next, one transaction per run of steers to the same process; each
        still gets its own reply (or error), in order."""
        while self._steers:
            batch, self._steers = self._steers, []
            for pk, same_process in itertools.groupby(batch, key=lambda steer: steer.pk):
                run = list(same_process)
                refused: BrainError | None
                try:
                    steered, refused = await call_service(
                        steering.steer_as, self.user, pk, [steer.message for steer in run]
                    )
                except Exception as exc:
                    steered, refused = [], as_brain_error(exc, "steer failed")
                for steer, result in zip(run, steered, strict=False):
                    data = out.PendingData(
                        processId=steer.public_id, pending=result.pending, seq=result.message.seq
                    )
                    await self.send_model(out.ProcessSteered(replyTo=steer.request_id, data=data))
                # Steers over the user's limit (429), or all of a run that failed, not queued.
                for steer in run[len(steered) :]:
                    assert refused is not None
                    await self.send_error(steer.request_id, refused)

    async def _steers_applied(self) -> None:
        """Wait until the queued steers are applied: a frame after them sees their effect."""
        if self._steering is not None:
            await asyncio.shield(self._steering)
