"""Calling a sync service from the consumer's event loop."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from django.db import close_old_connections

T = TypeVar("T")


def call_service(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Awaitable[T]:
    """Run a sync service in a worker thread of the event loop's executor, with this
    coroutine's context, dropping broken or expired database connections before and after
    (as channels' database_sync_to_async does). Not thread-sensitive: a lifecycle call may
    wait for a lane, and must not hold up every other socket's database calls meanwhile.
    Plain run_in_executor: asgiref's SyncToAsync machinery cost more than a chat's own
    service call."""
    context = contextvars.copy_context()
    call = functools.partial(context.run, _in_worker_thread, fn, args, kwargs)
    return asyncio.get_running_loop().run_in_executor(None, call)


def _in_worker_thread(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        close_old_connections()
