"""The MCP tools: each parses its arguments (the SDK checks their types against the schema it
publishes), takes the person from the authenticated request, and calls one function of
`mcp_face.calls` in a worker thread.

A domain error is a tool error (`isError`), never a protocol error nor a 500: its text is the
message REST would answer, its structured content `{code, error, message, field}` (`field`:
the argument at fault, when one is; a rate limit's refusal adds `retryAfter`, in seconds).
What no face stores (a NUL, a lone surrogate, …) never reaches a tool: the endpoint refuses
the request first, as a JSON-RPC error naming the argument (mcp_face/endpoint.py).

A long deep think is never a call held open: `process_create` answers as soon as the process
is started; the client polls `process_get` (or reads, and listens to, the resource
`vancetope://processes/tp_N`) until it is CLOSED.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from mcp_face import calls
from mcp_face.identity import person_of
from vancetope.errors import BrainError
from vancetope.ratelimit import RateLimited
from vancetope.service_calls import call_service

ProcessId = Annotated[str, Field(description="the process, tp_N")]
Limit = Annotated[int, Field(description=f"at most this many rows, 1 to {calls.MAX_ROWS}")]
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def refusal(exc: BrainError) -> CallToolResult:
    error: dict[str, Any] = {
        "code": exc.code,
        "error": exc.error,
        "message": exc.message,
        "field": exc.field,
    }
    if isinstance(exc, RateLimited):
        error["retryAfter"] = exc.retry_after  # seconds, as the WebSocket's error frame has it
    return CallToolResult(
        content=[TextContent(type="text", text=f"{exc.code} {exc.error}: {exc.message}")],
        structured_content=error,
        is_error=True,
    )


async def respond(
    ctx: Context, fn: Callable[..., dict[str, Any]], **arguments: Any
) -> CallToolResult:
    """`fn(person, **arguments)` in a worker thread, as the WebSocket face calls services."""
    try:
        data = await call_service(fn, person_of(ctx), **arguments)
    except BrainError as exc:
        return refusal(exc)
    text = json.dumps(data, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def register_tools(server: MCPServer) -> None:  # noqa: C901 (one nested function per tool)
    @server.tool(annotations=CHANGES)
    async def process_create(
        ctx: Context,
        goal: Annotated[str, Field(description="what the process is to think about")],
        recipe: Annotated[
            str | None, Field(description="a recipe of the project (default: deep-think)")
        ] = None,
        params: Annotated[
            dict[str, Any] | None, Field(description="the recipe's params, overriding its own")
        ] = None,
        session: Annotated[
            str | None, Field(description="a session of yours (sess_N) to run it in")
        ] = None,
        project: Annotated[
            str | None, Field(description="the project (proj_…); needed with several")
        ] = None,
    ) -> CallToolResult:
        """Start a think process (a deep think by default) and answer at once with it
        (status RUNNING): it runs for seconds to minutes on its own. Follow it with
        process_get (or the resource vancetope://processes/tp_N) until its status is CLOSED;
        its question to you, if any, appears in inbox_list."""
        return await respond(
            ctx,
            calls.process_create,
            goal=goal,
            recipe=recipe,
            params=params,
            session=session,
            project=project,
        )

    @server.tool(annotations=READ_ONLY)
    async def process_list(
        ctx: Context,
        status: Annotated[str | None, Field(description="only in this status")] = None,
        session: Annotated[str | None, Field(description="only of this session, sess_N")] = None,
        limit: Limit = 20,
    ) -> CallToolResult:
        """Your processes (and those of runs you own), newest first."""
        return await respond(ctx, calls.process_list, status=status, session=session, limit=limit)

    @server.tool(annotations=READ_ONLY)
    async def process_get(
        ctx: Context,
        process: ProcessId,
        messages: Annotated[
            int, Field(description="with the last N messages of its conversation")
        ] = 5,
    ) -> CallToolResult:
        """One process: its status, task tree, last error, last result (its report once
        CLOSED) and last messages."""
        return await respond(ctx, calls.process_get, process=process, messages=messages)

    @server.tool(annotations=CHANGES)
    async def process_steer(
        ctx: Context,
        process: ProcessId,
        message: Annotated[str, Field(description="what to tell it")],
    ) -> CallToolResult:
        """Send the process a message; it reads it at its next turn."""
        return await respond(ctx, calls.process_steer, process=process, message=message)

    for call in calls.LIFECYCLE:
        _register_lifecycle(server, call)

    @server.tool(annotations=READ_ONLY)
    async def inbox_list(
        ctx: Context,
        status: Annotated[
            str | None, Field(description="OPEN, ANSWERED, DISMISSED or EXPIRED")
        ] = "OPEN",
        kind: Annotated[str | None, Field(description="QUESTION, APPROVAL, …")] = None,
        process: Annotated[str | None, Field(description="only those of this process")] = None,
        limit: Limit = 20,
    ) -> CallToolResult:
        """Your inbox: questions, approvals and results your processes left for you."""
        return await respond(
            ctx, calls.inbox_list, status=status, kind=kind, process=process, limit=limit
        )

    @server.tool(annotations=CHANGES)
    async def inbox_answer(
        ctx: Context,
        item: Annotated[str, Field(description="the item, inb_N")],
        answer: Annotated[
            dict[str, Any],
            Field(
                description='APPROVAL: {"decision": "approve" or "reject", "comment"?}; '
                'QUESTION: {"text"} or {"choice"} (one of its options)',
            ),
        ],
    ) -> CallToolResult:
        """Answer an OPEN inbox item; the answer goes to the process that asked."""
        return await respond(ctx, calls.inbox_answer, item=item, answer=answer)

    @server.tool(annotations=CHANGES)
    async def workflow_run(
        ctx: Context,
        workflow: Annotated[str, Field(description="the workflow, wf_N")],
        values: Annotated[dict[str, Any] | None, Field(description="the workflow's inputs")] = None,
    ) -> CallToolResult:
        """Run a workflow (a system run owned by you); answers its process and run at once."""
        return await respond(ctx, calls.workflow_run, workflow=workflow, values=values or {})

    @server.tool(annotations=READ_ONLY)
    async def memory_search(
        ctx: Context,
        query: Annotated[str, Field(description="what to look for")],
        k: Annotated[int, Field(description="how many results")] = 5,
        scope: Annotated[str | None, Field(description="only items of this scope")] = None,
        mode: Annotated[str, Field(description="hybrid, lexical or dense")] = "hybrid",
        project: Annotated[str | None, Field(description="from this project up")] = None,
        session: Annotated[str | None, Field(description="from this session up")] = None,
    ) -> CallToolResult:
        """Search the memory and documents you can see, best first."""
        return await respond(
            ctx,
            calls.memory_search,
            query=query,
            k=k,
            scope=scope,
            mode=mode,
            project=project,
            session=session,
        )


def _register_lifecycle(server: MCPServer, call: str) -> None:
    async def lifecycle(ctx: Context, process: ProcessId) -> CallToolResult:
        return await respond(ctx, calls.process_lifecycle, call=call, process=process)

    description = {
        "pause": "Pause a process at its next boundary; resume it later.",
        "resume": "Resume a paused or suspended process.",
        "stop": "Stop a process for good (CLOSED/STOPPED), with its children.",
    }[call]
    server.add_tool(lifecycle, name=f"process_{call}", description=description, annotations=CHANGES)
