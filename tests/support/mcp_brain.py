"""An MCP client against the Brain's `/mcp`: the ASGI application served by uvicorn in a
thread of the test process (so the test's database and in-process lanes are the Brain's),
and the `mcp` SDK's own ClientSession over its Streamable HTTP client."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import uvicorn
from django.core.asgi import get_asgi_application
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from mcp_face.endpoint import McpEndpoint


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def mcp_brain() -> Iterator[str]:
    """Serve `/mcp` in front of Django on a free port; yields the MCP URL."""
    with serve(McpEndpoint(get_asgi_application())) as base_url:
        yield f"{base_url}/mcp"


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve an ASGI application on a free port of 127.0.0.1; yields its base URL."""
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@asynccontextmanager
async def mcp_client(url: str, token: str, *, modern: bool = False) -> AsyncIterator[ClientSession]:
    """A client session; `modern`: on the 2026-07-28 protocol (`server/discover`, which
    `subscriptions/listen` needs) instead of the default handshake (2025-11-25)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await (session.discover() if modern else session.initialize())
        yield session


def text(result: CallToolResult) -> str:
    """A tool call's text (what a model reads)."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def data(result: CallToolResult) -> dict[str, Any]:
    """A successful tool call's JSON answer."""
    assert not result.is_error, result.content
    return dict(json.loads(text(result)))
