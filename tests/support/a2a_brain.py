"""An A2A client against the Brain's `/a2a/…`: the ASGI application (the A2A endpoint in front
of Django) served by uvicorn in a thread of the test process, and the `a2a-sdk`'s own client
made from the agent's card."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.client import Client
from a2a.types.a2a_pb2 import AgentCard, Message, Part, Role, SendMessageRequest
from django.core.asgi import get_asgi_application

from a2a_face.endpoint import A2aEndpoint
from tests.support.mcp_brain import serve


@contextmanager
def a2a_brain() -> Iterator[str]:
    """Serve `/a2a/…` in front of Django on a free port; yields the base URL."""
    with serve(A2aEndpoint(get_asgi_application())) as base_url:
        yield base_url


@asynccontextmanager
async def a2a_client(
    agent_url: str, token: str, *, streaming: bool = True
) -> AsyncIterator[tuple[Client, AgentCard]]:
    """The SDK's client of the agent at `agent_url`, made from its card (fetched with the
    token by the SDK's card resolver), and the card."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, agent_url).get_agent_card()
        config = ClientConfig(httpx_client=http, streaming=streaming)
        yield ClientFactory(config).create(card), card


def user_message(text: str, **fields: Any) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=f"m-{abs(hash(text))}", **fields)
    message.parts.append(Part(text=text))
    return SendMessageRequest(message=message)


def rpc(url: str, token: str | None, method: str, params: dict[str, Any]) -> httpx.Response:
    """One JSON-RPC request as any HTTP client sends it (0.3 methods without A2A-Version)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url, json=body, headers=headers, timeout=30)
