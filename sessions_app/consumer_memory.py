"""The memory frame of the WebSocket consumer (PROTOCOL.md, second stage): `memory-search`
searches from the bound session upwards (its own session items, its project's, group's and
tenant's, the project's documents). A mixin of BrainConsumer (sessions_app/consumers.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessions_app.models import Session
from sessions_app.protocol import inbound as p
from sessions_app.protocol import outbound as out
from sessions_app.service_calls import call_service
from vancetope.memory.scopes import project_reach
from vancetope.memory.search import search


def search_from_session(session_id: int, query: str, k: int, scope: str | None) -> Any:
    session = Session.objects.select_related("project").get(pk=session_id)
    return search(project_reach(session.project, session.pk), query, k, scope=scope)


class MemoryFrames:
    if TYPE_CHECKING:  # BrainConsumer's

        async def send_model(self, frame: out.Reply) -> None: ...

        def _bound_session_id(self) -> int: ...

    async def on_memory_search(self, frame: p.MemorySearch) -> None:
        data = frame.data
        results = await call_service(
            search_from_session, self._bound_session_id(), data.query, data.k, data.scope
        )
        body = out.MemoryResultsData.model_validate({"results": results})
        await self.send_model(out.MemoryResults(replyTo=frame.id, data=body))
