"""A socket's call that wakes a lane, made in a lane thread of the embedded Brain.

`call_service` (vancetope/service_calls.py) runs a service in the event loop's executor; the
lane it wakes then starts in another thread, the in-process worker's. For a chat message that
is two hops between threads before the turn begins, each a wake-up of a thread and a trip of
the GIL between the cores. `call_then_drive` runs the service in a lane thread that is free
now instead, hands its result back to the socket, and drives the woken lane in that same thread
(processes/lane/worker.py, `InProcessWorker.call_then_drive`). When no lane thread is free, or
lanes run in Celery workers (the distributed runtime), it is `call_service`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings

from processes.lane.worker import get_worker
from vancetope.service_calls import call_service

T = TypeVar("T")


async def call_then_drive(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)`, as `call_service` runs it (with this coroutine's context), in a
    free lane thread that then drives the lanes it woke."""
    if settings.VANCETOPE_WORKER != "inprocess":
        return await call_service(fn, *args, **kwargs)
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T] = loop.create_future()

    def done(result: T | None, error: BaseException | None) -> None:
        loop.call_soon_threadsafe(_settle, answer, result, error)

    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    if not get_worker().call_then_drive(call, done):
        return await call_service(fn, *args, **kwargs)
    return await answer


def _settle(answer: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if answer.cancelled():  # the socket went away meanwhile
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)
