"""The memory frame (docs/protocol.md): `memory-search` searches from the bound session
upwards (its own session items, its project's, group's and tenant's, the project's
documents)."""

from __future__ import annotations

from typing import Any

from gateway.frames.socket import FrameHandler, Socket
from protocol import inbound as p
from protocol import outbound as out
from sessions_app.models import Session
from vancetope.memory.scopes import project_reach
from vancetope.memory.search import search
from vancetope.service_calls import call_service


def search_from_session(session_id: int, query: str, k: int, scope: str | None) -> Any:
    session = Session.objects.select_related("project").get(pk=session_id)
    return search(project_reach(session.project, session.pk), query, k, scope=scope)


async def memory_search(socket: Socket, frame: p.MemorySearch) -> None:
    data = frame.data
    results = await call_service(
        search_from_session, socket.bound_session_id(), data.query, data.k, data.scope
    )
    body = out.MemoryResultsData.model_validate({"results": results})
    await socket.send_model(out.MemoryResults(replyTo=frame.id, data=body))


HANDLERS: dict[str, FrameHandler] = {"memory-search": memory_search}
