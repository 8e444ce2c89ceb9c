"""A socket closes (4401) once its user is deactivated or the token it was opened with is
revoked, whichever Brain process makes the change: it listens on the channel-layer groups that
vancetope/tenancy/revocation.py sends to. A mixin of BrainConsumer (sessions_app/consumers.py)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from vancetope.errors import BrainError
from vancetope.tenancy.revocation import token_group, user_group

log = logging.getLogger(__name__)

UNAUTHENTICATED = 4401
# The client's address tried too many wrong API tokens (vancetope/ratelimit.py).
RATE_LIMITED = 4429


class RevocableSocket:
    user: Any
    scope: Any
    channel_layer: Any
    channel_name: str
    _auth_groups: tuple[str, ...] = ()

    if TYPE_CHECKING:  # AsyncWebsocketConsumer's

        async def close(
            self, code: int | bool | None = None, reason: str | None = None
        ) -> None: ...

        async def disconnect(self, code: int) -> None: ...

        async def send_error(self, request_id: str | None, exc: BrainError) -> None: ...

    async def refuse(self) -> None:
        """Close a socket without a user: 4401, or 4429 after an error frame saying when to
        try again when its address tried too many wrong tokens."""
        throttled = self.scope.get("auth_throttled")
        if throttled is None:
            await self.close(code=UNAUTHENTICATED)
            return
        await self.send_error(None, throttled)
        await self.close(code=RATE_LIMITED)

    async def join_auth_groups(self) -> None:
        groups = [user_group(self.user.pk)]
        if self.scope.get("api_token_id") is not None:
            groups.append(token_group(self.scope["api_token_id"]))
        self._auth_groups = tuple(groups)
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)

    async def leave_auth_groups(self) -> None:
        groups, self._auth_groups = self._auth_groups, ()
        for group in groups:
            try:
                await self.channel_layer.group_discard(group, self.channel_name)
            except Exception:
                log.exception("leaving %s failed", group)

    async def auth_revoked(self, message: dict[str, Any]) -> None:
        """Group handler: this socket's token was revoked or its user deactivated."""
        log.info("closing a socket of user %s: its access was revoked", self.user.pk)
        await self.close(code=UNAUTHENTICATED)
        # The session's disconnect policy runs now, not only once the client has completed
        # the close; the server's disconnect afterwards finds nothing left to do.
        await self.disconnect(UNAUTHENTICATED)
