"""A socket closes (4401) once its user is deactivated or the token it was opened with is
revoked, whichever Brain process makes the change: it listens on the channel-layer groups that
vancetope/tenancy/revocation.py sends to. The consumer (gateway/consumer.py) joins them on
connect, leaves them when it ends, and its group handler `auth_revoked` closes it."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from vancetope.errors import BrainError
from vancetope.tenancy.revocation import held, token_group, user_group

log = logging.getLogger(__name__)

UNAUTHENTICATED = 4401
# The client's address tried too many wrong API tokens (vancetope/ratelimit.py).
RATE_LIMITED = 4429


class AuthSocket(Protocol):
    user: Any
    scope: Any
    channel_layer: Any
    channel_name: str
    # The revocation groups this socket listens on.
    auth_groups: tuple[str, ...]

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None: ...

    async def send_error(self, request_id: str | None, exc: BrainError) -> None: ...


async def refuse(socket: AuthSocket) -> None:
    """Close a socket without a user: 4401, or 4429 after an error frame saying when to
    try again when its address tried too many wrong tokens."""
    throttled = socket.scope.get("auth_throttled")
    if throttled is None:
        await socket.close(code=UNAUTHENTICATED)
        return
    await socket.send_error(None, throttled)
    await socket.close(code=RATE_LIMITED)


async def join_auth_groups(socket: AuthSocket) -> None:
    groups = [user_group(socket.user.pk)]
    if socket.scope.get("api_token_id") is not None:
        groups.append(token_group(socket.scope["api_token_id"]))
    socket.auth_groups = tuple(groups)
    held.hold(socket.user.pk, socket.scope.get("api_token_id"))
    for group in groups:
        await socket.channel_layer.group_add(group, socket.channel_name)


async def leave_auth_groups(socket: AuthSocket) -> None:
    groups, socket.auth_groups = socket.auth_groups, ()
    if groups:
        held.release(socket.user.pk, socket.scope.get("api_token_id"))
    for group in groups:
        try:
            await socket.channel_layer.group_discard(group, socket.channel_name)
        except Exception:
            log.exception("leaving %s failed", group)
