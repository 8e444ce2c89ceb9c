"""MCP servers through the official `mcp` SDK: one connection per configured server, reused.

The SDK is async; lanes are threads. One background thread runs an event loop that owns every
connection: a connection is a task that enters the transport and the ClientSession, then waits
until it is told to close, so the SDK's contexts are entered and left in the same task. Calls
from lanes are submitted to that loop and waited for with a timeout. A connection whose server
died (or that failed) is dropped and made again on the next use; `close_all` ends them all.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import sys
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TextIO

from django.conf import settings

from vancetope.tools.models import McpServer, McpTransport

log = logging.getLogger(__name__)


class McpFailure(Exception):
    """An MCP server could not be reached or failed a call; the message says how."""


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    # The server's idempotentHint: calling it again with the same arguments changes nothing.
    idempotent: bool = False


@dataclass
class _Connection:
    key: tuple[Any, ...]
    session: Any = None
    tools: list[McpTool] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    error: BaseException | None = None
    task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.error is None and self.task is not None and not self.task.done()


def _key(server: McpServer) -> tuple[Any, ...]:
    """A changed row (command, args, env, url) gets a new connection."""
    return (
        server.pk,
        server.transport,
        server.command,
        tuple(server.args),
        tuple(sorted(server.env.items())),
        server.url,
    )


class McpManager:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp", daemon=True)
        self._thread.start()
        self._connections: dict[int, _Connection] = {}

    # --- called from lanes -----------------------------------------------------------------------

    def list_tools(self, server: McpServer) -> list[McpTool]:
        connection = self._submit(self._connected(server), server, _timeout())
        return list(connection.tools)

    def call_tool(
        self,
        server: McpServer,
        name: str,
        arguments: dict[str, Any],
        timeout: float | None = None,
        *,
        idempotency_key: str = "",
    ) -> tuple[bool, str, Any]:
        """Returns (is_error, text, structured content). `idempotency_key`: sent in the
        request's `_meta` (as `idempotencyKey`), for a tool that declares it may be repeated."""
        timeout = timeout or _timeout()
        meta = {"idempotencyKey": idempotency_key} if idempotency_key else None
        call = self._call(server, name, arguments, seconds=timeout, meta=meta)
        return self._submit(call, server, timeout + 5)

    def close_all(self) -> None:
        if self._loop.is_closed():
            return
        future = asyncio.run_coroutine_threadsafe(self._close_all(), self._loop)
        try:
            future.result(timeout=15)
        except Exception:
            log.exception("closing MCP connections failed")

    def _submit(self, coroutine: Any, server: McpServer, timeout: float) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout as exc:
            future.cancel()
            raise McpFailure(f"MCP server {server.name!r} timed out after {timeout:.0f}s") from exc

    # --- on the loop -----------------------------------------------------------------------------

    async def _connected(self, server: McpServer) -> _Connection:
        current = self._connections.get(server.pk)
        if current is not None and current.key == _key(server) and current.alive:
            return current
        if current is not None:
            await self._close(current)
        connection = _Connection(_key(server))
        self._connections[server.pk] = connection
        connection.task = asyncio.create_task(self._hold(server, connection))
        await connection.ready.wait()
        if connection.error is not None:
            self._connections.pop(server.pk, None)
            raise McpFailure(
                f"MCP server {server.name!r} could not start: {_describe(connection.error)}"
            ) from connection.error
        return connection

    async def _hold(self, server: McpServer, connection: _Connection) -> None:
        from mcp import ClientSession

        try:
            async with _transport(server) as (read, write), ClientSession(read, write) as session:
                await asyncio.wait_for(session.initialize(), _timeout())
                listed = await asyncio.wait_for(session.list_tools(), _timeout())
                connection.tools = [
                    McpTool(
                        name=tool.name,
                        description=tool.description or "",
                        input_schema=dict(tool.input_schema or {"type": "object"}),
                        read_only=bool(tool.annotations and tool.annotations.read_only_hint),
                        idempotent=bool(tool.annotations and tool.annotations.idempotent_hint),
                    )
                    for tool in listed.tools
                ]
                connection.session = session
                connection.ready.set()
                await connection.closing.wait()
        except BaseException as exc:  # the SDK wraps failures in exception groups
            connection.error = exc
            if not isinstance(exc, asyncio.CancelledError | Exception):
                raise
        finally:
            connection.session = None
            connection.ready.set()

    async def _call(
        self,
        server: McpServer,
        name: str,
        arguments: dict[str, Any],
        *,
        seconds: float,
        meta: dict[str, Any] | None = None,
    ) -> tuple[bool, str, Any]:
        connection = await self._connected(server)
        try:
            result = await asyncio.wait_for(
                connection.session.call_tool(
                    name, arguments, read_timeout_seconds=seconds, meta=meta
                ),
                seconds,
            )
        except TimeoutError as exc:
            raise McpFailure(f"MCP tool {name!r} timed out after {seconds:.0f}s") from exc
        except Exception as exc:
            # The server died mid-call or broke the protocol: drop it, reconnect next time.
            await self._close(connection)
            self._connections.pop(server.pk, None)
            raise McpFailure(
                f"MCP server {server.name!r} crashed or closed the connection: {_describe(exc)}"
            ) from exc
        text = "\n".join(
            getattr(block, "text", "") for block in result.content if block.type == "text"
        )
        return bool(result.is_error), text, result.structured_content

    async def _close(self, connection: _Connection) -> None:
        connection.closing.set()
        if connection.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(connection.task), 10)
            except Exception:
                connection.task.cancel()

    async def _close_all(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await self._close(connection)


def _transport(server: McpServer) -> Any:
    if server.transport == McpTransport.HTTP:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(server.url)
    from mcp import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=server.command,
        args=[str(arg) for arg in server.args],
        env={str(k): str(v) for k, v in server.env.items()} or None,
    )
    return stdio_client(params, errlog=server_errlog())


def server_errlog() -> TextIO:
    """Where a stdio server's stderr goes: this process's stderr as a file, not an object that
    stands in for it. The SDK hands the server a file descriptor, and its default is the
    `sys.stderr` of the moment it was imported: in a Celery worker that is Celery's
    LoggingProxy, which has none, and no stdio server could start there."""
    stream = sys.stderr
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or open(os.devnull, "w")  # noqa: SIM115 (the server's, for good)
    return stream


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _timeout() -> float:
    return float(settings.VANCETOPE_MCP_TIMEOUT)


_manager: McpManager | None = None
_manager_lock = threading.Lock()


def get_mcp_manager() -> McpManager:
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = McpManager()
        return _manager


def close_mcp_connections() -> None:
    """Close every MCP connection (their server processes exit); the next use reconnects."""
    with _manager_lock:
        manager = _manager
    if manager is not None:
        manager.close_all()


atexit.register(close_mcp_connections)
