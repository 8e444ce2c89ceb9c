"""The thinking-space frames of the WebSocket consumer (PROTOCOL.md, second stage): parse, call
one space request, reply `space {space}`. A mixin of BrainConsumer (sessions_app/consumers.py).

`space-checkpoint` and `space-return` run a control turn of the node's agent: the reply comes
once the new state is verified (or the turn failed, with the reason), so it is awaited in a
task of its own while the socket goes on receiving frames and events.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from django.conf import settings

from sessions_app.protocol import inbound as p
from sessions_app.protocol import outbound as out
from sessions_app.service_calls import call_service
from spaces import requests
from vancetope.errors import BrainError, Conflict

# How often a control turn's outcome is read while it runs.
POLL_SECONDS = 0.05


class SpaceFrames:
    user: Any

    if TYPE_CHECKING:  # BrainConsumer's

        async def send_model(self, frame: out.Reply) -> None: ...

        async def send_error(self, request_id: str | None, exc: BrainError) -> None: ...

    async def _send_space(self, request_id: str | None, space: dict[str, Any]) -> None:
        data = out.SpaceData.model_validate({"space": space})
        await self.send_model(out.Space(replyTo=request_id, data=data))

    async def on_space_get(self, frame: p.SpaceGet) -> None:
        data = frame.data
        space = await call_service(
            requests.get_space,
            self.user,
            space_id=data.spaceId,
            node_id=data.nodeId,
            session_id=getattr(self, "session_id", None),
        )
        await self._send_space(frame.id, space)

    async def on_space_split(self, frame: p.SpaceTitled) -> None:
        data = frame.data
        space = await call_service(
            requests.split, self.user, data.nodeId, data.title, data.revision
        )
        await self._send_space(frame.id, space)

    async def on_space_rename(self, frame: p.SpaceTitled) -> None:
        data = frame.data
        space = await call_service(
            requests.rename, self.user, data.nodeId, data.title, data.revision
        )
        await self._send_space(frame.id, space)

    async def on_space_fork_retry(self, frame: p.SpaceControl) -> None:
        space = await call_service(requests.retry_fork, self.user, frame.data.nodeId)
        await self._send_space(frame.id, space)

    async def on_space_checkpoint(self, frame: p.SpaceControl) -> None:
        data = frame.data
        began = await call_service(
            requests.begin_control, self.user, frame.type, data.nodeId, data.revision
        )
        task = asyncio.ensure_future(self._control_reply(frame.id, began))
        self._space_tasks().add(task)
        task.add_done_callback(self._space_tasks().discard)

    on_space_return = on_space_checkpoint

    def _space_tasks(self) -> set[asyncio.Future[None]]:
        tasks: set[asyncio.Future[None]] | None = getattr(self, "_control_tasks", None)
        if tasks is None:
            tasks = set()
            self._control_tasks = tasks
        return tasks

    async def _control_reply(self, request_id: str | None, began: requests.Began) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.VANCETOPE_SPACE_CONTROL_TIMEOUT
        try:
            while True:
                outcome, space = await call_service(requests.control_result, began)
                if outcome is not None:
                    break
                if loop.time() > deadline:
                    await call_service(requests.give_up, began)
                    outcome, space = await call_service(requests.control_result, began)
                    outcome = outcome or "the control turn timed out"
                    break
                await asyncio.sleep(POLL_SECONDS)
            if outcome:
                await self.send_error(request_id, Conflict(outcome, error="control-failed"))
            else:
                await self._send_space(request_id, space)
        except BrainError as exc:
            await self.send_error(request_id, exc)

    async def _spaces_done(self) -> None:
        """The socket closes: no reply is sent for a control turn still on (it goes on)."""
        for task in list(self._space_tasks()):
            task.cancel()
