"""The thinking-space frames (docs/protocol.md): parse, call one space request, reply
`space {space}`.

`space-checkpoint` and `space-return` run a control turn of the node's agent: the reply comes
once the new state is verified (or the turn failed, with the reason), so it is awaited in a
task of its own (held in the socket's `control_tasks`) while the socket goes on receiving
frames and events.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings

from gateway.frames.socket import FrameHandler, Socket
from protocol import inbound as p
from protocol import outbound as out
from spaces import requests
from vancetope.errors import BrainError, Conflict
from vancetope.service_calls import call_service

# How often a control turn's outcome is read while it runs.
POLL_SECONDS = 0.05


async def send_space(socket: Socket, request_id: str | None, space: dict[str, Any]) -> None:
    data = out.SpaceData.model_validate({"space": space})
    await socket.send_model(out.Space(replyTo=request_id, data=data))


async def space_get(socket: Socket, frame: p.SpaceGet) -> None:
    data = frame.data
    space = await call_service(
        requests.get_space,
        socket.user,
        space_id=data.spaceId,
        node_id=data.nodeId,
        session_id=socket.session_id,
    )
    await send_space(socket, frame.id, space)


async def space_split(socket: Socket, frame: p.SpaceTitled) -> None:
    data = frame.data
    space = await call_service(requests.split, socket.user, data.nodeId, data.title, data.revision)
    await send_space(socket, frame.id, space)


async def space_rename(socket: Socket, frame: p.SpaceTitled) -> None:
    data = frame.data
    space = await call_service(requests.rename, socket.user, data.nodeId, data.title, data.revision)
    await send_space(socket, frame.id, space)


async def space_prompt(socket: Socket, frame: p.SpacePrompt) -> None:
    data = frame.data
    space = await call_service(requests.first_prompt, socket.user, data.nodeId, data.text)
    await send_space(socket, frame.id, space)


async def space_suggest(socket: Socket, frame: p.SpaceSuggest) -> None:
    space = await call_service(requests.suggest, socket.user, socket.bound_session_id())
    await send_space(socket, frame.id, space)


async def space_fork_retry(socket: Socket, frame: p.SpaceControl) -> None:
    space = await call_service(requests.retry_fork, socket.user, frame.data.nodeId)
    await send_space(socket, frame.id, space)


async def space_control(socket: Socket, frame: p.SpaceControl) -> None:
    """`space-checkpoint`, `space-return`: answered once the control turn is over."""
    data = frame.data
    began = await call_service(
        requests.begin_control, socket.user, frame.type, data.nodeId, data.revision
    )
    task = asyncio.ensure_future(_control_reply(socket, frame.id, began))
    socket.control_tasks.add(task)
    task.add_done_callback(socket.control_tasks.discard)


async def _control_reply(socket: Socket, request_id: str | None, began: requests.Began) -> None:
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
            await socket.send_error(request_id, Conflict(outcome, error="control-failed"))
        else:
            await send_space(socket, request_id, space)
    except BrainError as exc:
        await socket.send_error(request_id, exc)


def cancel_control_replies(socket: Socket) -> None:
    """The socket closes: no reply is sent for a control turn still on (it goes on)."""
    for task in list(socket.control_tasks):
        task.cancel()


HANDLERS: dict[str, FrameHandler] = {
    "space-get": space_get,
    "space-split": space_split,
    "space-rename": space_rename,
    "space-prompt": space_prompt,
    "space-suggest": space_suggest,
    "space-fork-retry": space_fork_retry,
    "space-checkpoint": space_control,
    "space-return": space_control,
}
