"""Steer frames (docs/protocol.md `process-steer`): queued, applied in batches in order, each
answered. Every other frame waits for the queued steers first (gateway/consumer.py), so it
sees their effect."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass

from gateway.frames.errors import as_brain_error
from gateway.frames.socket import FrameHandler, Socket
from processes.actions import steer as steering
from protocol import inbound as p
from protocol import outbound as out
from vancetope.errors import BrainError
from vancetope.ids import parse_public_id
from vancetope.service_calls import call_service


@dataclass(frozen=True)
class _Steer:
    request_id: str | None
    public_id: str
    pk: int
    message: str


class SteerQueue:
    """One socket's steers not yet applied, and the task applying them."""

    def __init__(self, socket: Socket) -> None:
        self._socket = socket
        self._steers: list[_Steer] = []
        self._steering: asyncio.Task[None] | None = None

    def add(self, frame: p.ProcessSteer) -> None:
        pk = parse_public_id("tp", frame.data.processId, "process")
        self._steers.append(_Steer(frame.id, frame.data.processId, pk, frame.data.message))
        if self._steering is None or self._steering.done():
            self._steering = asyncio.ensure_future(self._apply())

    async def _apply(self) -> None:
        """Apply the queued steers in order. Steers that arrive while one batch is applied go
        together in the next, one transaction per run of steers to the same process; each
        still gets its own reply (or error), in order."""
        socket = self._socket
        while self._steers:
            batch, self._steers = self._steers, []
            for pk, same_process in itertools.groupby(batch, key=lambda steer: steer.pk):
                run = list(same_process)
                refused: BrainError | None
                try:
                    steered, refused = await call_service(
                        steering.steer_as, socket.user, pk, [steer.message for steer in run]
                    )
                except Exception as exc:
                    steered, refused = [], as_brain_error(exc, "steer failed")
                for steer, result in zip(run, steered, strict=False):
                    data = out.PendingData(
                        processId=steer.public_id, pending=result.pending, seq=result.message.seq
                    )
                    await socket.send_model(out.ProcessSteered(replyTo=steer.request_id, data=data))
                # Steers over the user's limit (429), or all of a run that failed, not queued.
                for steer in run[len(steered) :]:
                    assert refused is not None
                    await socket.send_error(steer.request_id, refused)

    async def applied(self) -> None:
        """Wait until the queued steers are applied: a frame after them sees their effect."""
        if self._steering is not None:
            await asyncio.shield(self._steering)


async def process_steer(socket: Socket, frame: p.ProcessSteer) -> None:
    """Queued: the socket reads on while a batch is applied (SteerQueue._apply)."""
    socket.steers.add(frame)


HANDLERS: dict[str, FrameHandler] = {"process-steer": process_steer}
