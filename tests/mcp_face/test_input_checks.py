"""What a client sends the MCP face is checked as REST and the WebSocket check it, before the
SDK reads it: text no database stores (a NUL, a lone surrogate), a number too long to read, a
body nested too deeply or larger than a WebSocket frame, bytes that are not UTF-8. Each is a
JSON-RPC error naming the field (-32602 for a tool's argument, by its name; -32600 in the
envelope; -32700 for a body that cannot be read) or a 413, never a 500, and nothing is
stored."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from processes.models import PendingMessage, ThinkProcess
from tests.support.mcp_brain import data, mcp_brain, mcp_client

pytestmark = pytest.mark.django_db(transaction=True)

DIGITS = "9" * 5000


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def call(tool: str, arguments: dict[str, Any], *, request_id: Any = 1) -> bytes:
    """A tools/call request as JSON text (lone surrogates and NULs as escapes)."""
    request = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return json.dumps(request).encode()


def post(url: str, token: str, raw: bytes) -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    return httpx.post(url, content=raw, headers=headers, timeout=30)


def nothing_stored() -> None:
    assert not ThinkProcess.objects.filter(session__client_type="mcp").exists()
    assert not PendingMessage.objects.exists()


def test_a_goal_with_a_nul_is_invalid_params_naming_it_and_nothing_is_stored(alice):
    with mcp_brain() as url:

        async def create() -> MCPError:
            async with mcp_client(url, alice.token) as client:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("process_create", {"goal": "study\x00 Saturn"})
            return refused.value

        # when an MCP client creates a process whose goal holds a NUL
        error = asyncio.run(create())
    # then it is invalid params naming the argument (on SQLite it was stored; on
    # PostgreSQL an unhandled error)
    assert error.code == -32602
    assert error.message.startswith("goal: must not contain NUL characters")
    assert error.data == {"field": "goal"}
    # and nothing was stored
    nothing_stored()


def test_a_steer_with_a_nul_is_refused_and_nothing_is_queued(alice):
    with mcp_brain() as url:

        async def steer() -> tuple[MCPError, int]:
            async with mcp_client(url, alice.token) as client:
                # given a process of alice's, made over MCP
                created = data(
                    await client.call_tool("process_create", {"goal": "hi", "recipe": "ford"})
                )
                queued = await asyncio.to_thread(PendingMessage.objects.count)
                # when the client steers it with a NUL in the message
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(
                        "process_steer", {"process": created["id"], "message": "a\x00b"}
                    )
            return refused.value, queued

        error, queued = asyncio.run(steer())
    # then it is invalid params naming the message, and nothing more was queued
    assert error.code == -32602
    assert error.data == {"field": "message"}
    assert PendingMessage.objects.count() == queued


# (what, the request's body, the code, the field named; None: a parse error)
REFUSED = [
    ("a lone surrogate in the goal", call("process_create", {"goal": "a\ud800"}), -32602, "goal"),
    (
        "a NUL in a workflow's input",
        call("workflow_run", {"workflow": "wf_1", "values": {"topic": "\x00"}}),
        -32602,
        "values.topic",
    ),
    (
        "params nested 600 deep",
        call("process_create", {"goal": "g", "params": {"x": nested(600)}}),
        -32602,
        "params.x.0.0",
    ),
    (
        "a 5,000-digit limit",
        call("process_list", {"limit": 7}).replace(b'"limit": 7', b'"limit": ' + DIGITS.encode()),
        -32602,
        "limit",
    ),
    ("a lone surrogate in the id", call("process_list", {}, request_id="\udc00"), -32600, "id"),
    (
        "a 5,000-digit id",
        call("process_list", {}, request_id=7).replace(b'"id": 7', b'"id": ' + DIGITS.encode()),
        -32600,
        "id",
    ),
    (
        "a body nested 100,000 deep",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        -32700,
        None,
    ),
    (
        "bytes that are not UTF-8",
        call("process_create", {"goal": "caf\u00e9"}).replace(b"\\u00e9", b"\xe9"),
        -32700,
        None,
    ),
]


@pytest.mark.parametrize(
    ("raw", "code", "field"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED]
)
def test_what_no_face_stores_is_a_json_rpc_error_naming_the_field(alice, raw, code, field):
    with mcp_brain() as url:
        # when a client posts it (the check comes before the SDK, so before any session)
        answer = post(url, alice.token, raw)
    # then it is a JSON-RPC error (an HTTP 400, as the SDK answers its own) naming the field
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == code, error
    if field is None:
        assert answer.json()["id"] is None
    else:
        assert error["message"].startswith(f"{field}:"), error
        assert error["data"] == {"field": field}
    assert "Traceback" not in answer.text
    nothing_stored()


def test_a_body_over_the_frame_limit_is_a_413_before_it_is_read(alice, settings):
    # given the frame limit at 64 kB
    settings.VANCETOPE_MAX_FRAME_BYTES = 64 * 1024
    with mcp_brain() as url:
        # when a client posts a goal of 200 kB, with its length and chunked
        raw = call("process_create", {"goal": "x" * (200 * 1024)})
        sized = post(url, alice.token, raw)

        def chunks():
            for start in range(0, len(raw), 8192):
                yield raw[start : start + 8192]

        headers = {"Authorization": f"Bearer {alice.token}", "Content-Type": "application/json"}
        chunked = httpx.post(url, content=chunks(), headers=headers, timeout=30)
    # then both are a 413 with REST's body naming the limit, and nothing was stored
    for answer in (sized, chunked):
        assert answer.status_code == 413, answer.text[:300]
        assert answer.json()["error"] == "too-large"
        assert "65536 bytes" in answer.json()["message"]
    nothing_stored()


def test_the_rate_limit_is_a_tool_error_that_says_when_to_try_again(alice, settings):
    # given a limit of one process a minute
    settings.VANCETOPE_RATE_PROCESS_CREATE = "1/minute"
    with mcp_brain() as url:

        async def create_twice() -> Any:
            async with mcp_client(url, alice.token) as client:
                data(await client.call_tool("process_create", {"goal": "a", "recipe": "ford"}))
                return await client.call_tool("process_create", {"goal": "b", "recipe": "ford"})

        # when a client creates two processes within the minute
        second = asyncio.run(create_twice())
    # then the second is a tool error 429 with the wait, as the WebSocket's error frame has it
    assert second.is_error
    refusal = second.structured_content
    assert (refusal["code"], refusal["error"]) == (429, "rate-limited")
    assert 1 <= refusal["retryAfter"] <= 60
    assert ThinkProcess.objects.filter(session__client_type="mcp").count() == 1
