"""A person holds at most VANCETOPE_MCP_SESSIONS_PER_PERSON MCP sessions at once (issue 42: a
client that opened one per call and never ended them held 1,500, +50 MB). One more closes
their session idle the longest, whose id then answers 404; while every one of theirs is in
use, a new one is refused with a 429 saying why. Another person's sessions are not touched."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from django.core.asgi import get_asgi_application
from mcp.shared.exceptions import MCPError

from mcp_face.endpoint import McpEndpoint
from tests.support.mcp_brain import mcp_client, serve

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "leaky", "version": "1"},
    },
}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def headers(token: str, session: str | None = None) -> dict[str, str]:
    sent = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2025-11-25",
    }
    return {**sent, "Mcp-Session-Id": session} if session else sent


def open_session(url: str, token: str) -> str:
    """A session opened as a leaky client does: initialize, and never a DELETE."""
    answer = httpx.post(url, json=INITIALIZE, headers=headers(token), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


def list_tools(url: str, token: str, session: str) -> int:
    answer = httpx.post(url, json=LIST_TOOLS, headers=headers(token, session), timeout=30)
    return answer.status_code


def first_error(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


@pytest.fixture
def endpoint(settings: Any) -> McpEndpoint:
    settings.VANCETOPE_MCP_SESSIONS_PER_PERSON = 2
    return McpEndpoint(get_asgi_application())


def test_a_session_beyond_the_cap_closes_the_one_idle_the_longest(alice, bob, endpoint):
    with serve(endpoint) as base:
        url = f"{base}/mcp"
        # given two sessions of alice's and one of bob's, none in use
        first, second = open_session(url, alice.token), open_session(url, alice.token)
        bobs = open_session(url, bob.token)
        assert list_tools(url, alice.token, first) == 200  # first is now the fresher one
        # when alice opens a third
        third = open_session(url, alice.token)
        # then the one idle the longest (second) is closed: its id answers 404
        assert list_tools(url, alice.token, second) == 404
        assert list_tools(url, alice.token, first) == 200
        assert list_tools(url, alice.token, third) == 200
        # and bob's session is untouched
        assert list_tools(url, bob.token, bobs) == 200
        # and however many more she opens, she holds two
        for _ in range(5):
            open_session(url, alice.token)
        assert endpoint.manager is not None
        owners = list(endpoint.manager._session_owners.values())
        assert len(owners) == 3  # two of alice's, one of bob's


def test_a_session_beyond_the_cap_while_all_are_in_use_is_refused_saying_why(alice, endpoint):
    with serve(endpoint) as base:
        url = f"{base}/mcp"

        async def three_clients() -> MCPError:
            # given two SDK clients of alice's, each holding its stream open (in use)
            async with mcp_client(url, alice.token) as one, mcp_client(url, alice.token) as two:
                await one.list_tools()
                await two.list_tools()
                # when a third client opens a session
                refused = None
                try:
                    async with mcp_client(url, alice.token):
                        pass
                except* MCPError as group:
                    refused = first_error(group)
                assert isinstance(refused, MCPError)
            # and once those two ended theirs, a new one opens
            async with mcp_client(url, alice.token) as again:
                await again.list_tools()
            return refused

        error = asyncio.run(three_clients())
        raw = httpx.post(url, json=INITIALIZE, headers=headers(alice.token), timeout=30)
    # then it was refused, naming the cap, not as an internal error
    assert error.code == -32600, error
    assert "too many MCP sessions" in error.message
    assert error.data == {"limit": 2}
    assert raw.status_code == 200  # the ended ones no longer count
