"""The SDK's RequestHandler, over the service functions of `a2a_face.calls`: the SDK's JSON-RPC
dispatcher parses every request (both protocol versions, 1.0's `SendMessage` and 0.3's
`message/send`) and hands it here; each method reads the message, calls one function in a
worker thread, and answers the task.

Errors are A2A errors naming the field: a bad argument is an invalid-params error (-32602)
whose message starts with the field and whose data is `{"field": …}`; a task that is not the
person's, or not this agent's, is task-not-found (-32001); a task already over cannot be
cancelled (-32002) nor take a message (-32004); a rate limit's refusal is -32029 with the wait
in its data. What no face stores (a NUL, a lone surrogate, …) never reaches here: the endpoint
refuses it first (vancetope/asgi_jsonrpc.py).

`message/send` waits for the task to settle (VANCETOPE_A2A_WAIT_SECONDS at most) unless asked
to return at once; `message/stream` sends the task, then an event at each change of its state
or status message, and ends on the settled status (sent even when the task had settled before
the first read). Both read the process row; a process that runs on a
Celery worker is followed the same way.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from django.conf import settings
from google.protobuf.json_format import MessageToDict

from a2a_face import calls
from a2a_face.agents import Agent
from a2a_face.tasks import SETTLED, seen
from vancetope.errors import BadRequest, BrainError, Conflict, NotFound
from vancetope.infra.a2a_errors import register_error
from vancetope.ratelimit import RateLimited
from vancetope.service_calls import call_service

# The context state keys the endpoint's context builder sets (a2a_face/endpoint.py).
PERSON = "vancetope.person"
AGENT = "vancetope.agent"
# How often a waiting send or a stream reads the process again.
POLL_SECONDS = 0.2


def caller(context: ServerCallContext) -> tuple[Any, Agent]:
    return context.state[PERSON], context.state[AGENT]


def message_text(message: Message) -> str:
    """The message's text: its text parts, and its data parts as JSON, in order."""
    if not message.parts:
        raise _invalid("message.parts", "send at least one text part")
    texts: list[str] = []
    for index, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind == "text":
            texts.append(part.text)
        elif kind == "data":
            texts.append(json.dumps(MessageToDict(part.data), ensure_ascii=False))
        else:
            raise _invalid(f"message.parts[{index}]", "only text and data parts are read")
    text = "\n\n".join(texts)
    if not text.strip():
        raise _invalid("message.parts", "the text is empty")
    return text


class RateLimitedError(A2AError):
    """Over a rate limit (vancetope/ratelimit.py): try again in `data.retryAfter` seconds."""

    message = "rate limited"


# A2A has no code for a rate limit: its spec asks only for "appropriate error responses", and
# none of its errors fits (-32004 unsupported operation would tell a client never to try again,
# and -32603 that the server failed). So the code is a server-defined one (JSON-RPC's
# -32000..-32099), outside the -32001..-32009 A2A 1.0 defines: -32029, as 429 is HTTP's, which
# other JSON-RPC servers use for the same refusal. What a client keys on is the message, the
# ErrorInfo reason RATE_LIMITED and `data` `{"error": "rate-limited", "retryAfter": seconds}`.
RATE_LIMITED = -32029
register_error(RateLimitedError, RATE_LIMITED, "RATE_LIMITED")


def _invalid(field: str, message: str) -> InvalidParamsError:
    return InvalidParamsError(message=f"{field}: {message}", data={"field": field})


def a2a_error(exc: BrainError, *, over: type[A2AError] = UnsupportedOperationError) -> A2AError:
    """A domain error as the A2A error it is; `over`: what a 409 (the task is over) means."""
    if isinstance(exc, BadRequest):
        field = exc.field or exc.error
        text = exc.message if exc.message.startswith(f"{field}:") else f"{field}: {exc.message}"
        return InvalidParamsError(message=text, data={"field": field})
    if isinstance(exc, NotFound):
        return TaskNotFoundError(message=exc.message)
    if isinstance(exc, Conflict):
        return over(message=exc.message)
    if isinstance(exc, RateLimited):
        return RateLimitedError(
            message=exc.message, data={"error": exc.error, "retryAfter": exc.retry_after}
        )
    return A2AError(message=f"{exc.code} {exc.error}: {exc.message}")


async def serve(
    fn: Any,
    context: ServerCallContext,
    *,
    over: type[A2AError] = UnsupportedOperationError,
    **arguments: Any,
) -> Any:
    """`fn(person, agent, **arguments)` in a worker thread; a domain error as an A2A error."""
    person, agent = caller(context)
    try:
        return await call_service(fn, person, agent, **arguments)
    except BrainError as exc:
        raise a2a_error(exc, over=over) from exc


def updates(task: Task) -> list[Event]:
    """The stream's events for the task as it stands: its artifacts, then its status."""
    events: list[Event] = [
        TaskArtifactUpdateEvent(
            task_id=task.id, context_id=task.context_id, artifact=artifact, last_chunk=True
        )
        for artifact in task.artifacts
    ]
    events.append(
        TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
    )
    return events


class ProcessTasks(RequestHandler):
    """An agent's tasks are the person's processes of its recipe."""

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        task, answer = await self._send(params, context)
        if params.configuration.return_immediately or task.status.state in SETTLED:
            return task
        deadline = time.monotonic() + settings.VANCETOPE_A2A_WAIT_SECONDS
        history = params.configuration.history_length
        while task.status.state not in SETTLED and time.monotonic() < deadline:
            await asyncio.sleep(POLL_SECONDS)
            task = await self._get(task.id, history, context, answer)
        return task

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        task, answer = await self._send(params, context)
        yield task
        if task.status.state in SETTLED:
            # Settled before the first read (a quick turn): the stream still ends on the
            # settled status, the event a 0.3 client reads as `final`.
            for update in updates(task):
                yield update
            return
        last = seen(task)
        while task.status.state not in SETTLED:
            await asyncio.sleep(POLL_SECONDS)
            task = await self._get(task.id, 0, context, answer)
            if seen(task) == last:
                continue
            last = seen(task)
            for update in updates(task):
                yield update

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        return await self._get(params.id, params.history_length, context)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        task: Task = await serve(
            calls.cancel, context, task_id=params.id, over=TaskNotCancelableError
        )
        return task

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        found: ListTasksResponse = await serve(
            calls.list_tasks,
            context,
            context_id=params.context_id,
            page_size=params.page_size,
            page_token=params.page_token,
            history=params.history_length,
        )
        return found

    async def _send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> tuple[Task, int]:
        """The task, and the pending seq of the message if it answered the task (else 0)."""
        message = params.message
        text = message_text(message)
        sent: tuple[Task, int] = await serve(
            calls.send,
            context,
            text=text,
            task_id=message.task_id,
            context_id=message.context_id,
            history=params.configuration.history_length,
        )
        return sent

    async def _get(
        self, task_id: str, history: int, context: ServerCallContext, answer_seq: int = 0
    ) -> Task:
        task: Task = await serve(
            calls.get, context, task_id=task_id, history=history, answer_seq=answer_seq
        )
        return task

    # --- not offered (the card says so) ----------------------------------------------------

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        raise UnsupportedOperationError(message="follow a task with tasks/get")
        yield  # an async generator, as the interface declares it

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise UnsupportedOperationError(message="this agent has no extended card")
