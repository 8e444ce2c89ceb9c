"""The `mcp` SDK's Streamable HTTP session manager with a cap on the sessions of one person.

The SDK caps the sessions of the whole manager (`max_sessions`, refused with a 503 and an
internal error, -32603) but not those of one principal: a client that opens a session per call
and never ends it (no DELETE) keeps each until its idle timeout, about 35 KB apiece (1,500 of
them: +50 MB, issue 42). Here a person holds at most `per_person` sessions: opening one more
closes their session idle the longest (no request in flight, no open GET stream; its id then
answers 404, and an MCP client opens a new session on a 404), and while every one of theirs is
in use the new one is refused (`refusing`, which the face answers before the SDK does).
UPSTREAM.md, `mcp_sessions.py`, lists the names relied on.
"""

from __future__ import annotations

import math
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager


class PersonCappedSessionManager(StreamableHTTPSessionManager):
    def __init__(self, *args: Any, per_person: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if per_person <= 0:
            raise ValueError("per_person must be a positive number of sessions")
        self.per_person = per_person

    def sessions_of(self, requestor: AuthorizationContext | None) -> list[str]:
        """The ids of the open sessions `requestor` opened, oldest first."""
        return [sid for sid, owner in self._session_owners.items() if owner == requestor]

    def refusing(self, requestor: AuthorizationContext | None) -> bool:
        """Whether a new session of `requestor`'s would be refused: they hold the cap, and
        every one of those sessions is in use."""
        own = self.sessions_of(requestor)
        return len(own) >= self.per_person and self._longest_idle(own) is None

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        # Called under the manager's creation lock, so the count is exact.
        if requestor is not None:
            own = self.sessions_of(requestor)
            while len(own) >= self.per_person:
                idle = self._longest_idle(own)
                if idle is None:
                    return None  # all in use: the face refused it already, unless in a race
                self._close(idle)
                own.remove(idle)
        return super()._admit_session(requestor)

    def _longest_idle(self, session_ids: list[str]) -> str | None:
        """Of these sessions, the one with no request in flight idle the longest (its idle
        deadline the earliest; a session without one counts as idle since it opened)."""
        idle = [sid for sid in session_ids if not self._server_instances[sid]._requests_in_flight]

        def deadline(sid: str) -> float:
            scope = self._server_instances[sid].idle_scope
            return -math.inf if scope is None else scope.deadline

        return min(idle, key=deadline, default=None)

    def _close(self, session_id: str) -> None:
        """Forget the session now (its id answers 404 from here on) and end its transport in
        the manager's task group, which ends its server task."""
        transport = self._server_instances.pop(session_id)
        self._session_owners.pop(session_id, None)
        assert self._task_group is not None
        self._task_group.start_soon(transport.terminate)
