"""The in-process worker of the embedded Brain: a thread pool that runs the lane task.

It runs the same Celery task the distributed workers run (`drive_lane_task`), so both
runtimes share one code path. Wakes for a process that is already queued
are coalesced: one queued drive drains everything pending.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger(__name__)
T = TypeVar("T")


class InProcessWorker:
    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lane")
        self._threads = threads
        self._queued: set[int] = set()
        self._lock = threading.Lock()
        # Jobs submitted and not finished (queued or running): below `_threads`, a new job
        # starts at once.
        self._in_flight = 0
        # The lane wakes that a `call_then_drive` call made in this thread (None: not in one).
        self._local = threading.local()
        self.stopping = threading.Event()

    def submit(self, process_id: int) -> Future[None] | None:
        if self.stopping.is_set():
            return None
        kept = getattr(self._local, "wakes", None)
        if kept is not None:
            # The call running in this thread drives its own wakes once it has returned.
            if process_id not in kept:
                kept.append(process_id)
            return None
        with self._lock:
            if process_id in self._queued:
                return None
            self._queued.add(process_id)
        return self._submit(self._run, process_id)

    def submit_start(self, process_id: int) -> Future[None] | None:
        """Start a spawned child (the start task), in a pool thread."""
        if self.stopping.is_set():
            return None
        return self._submit(self._run, process_id, start=True)

    def call_then_drive(
        self, call: Callable[[], T], done: Callable[[T | None, BaseException | None], None]
    ) -> bool:
        """Run `call` in a pool thread that is free now, hand its result (or its error) to
        `done`, then drive there the lanes it woke: a person's chat is accepted and its turn
        run by one thread, without a service thread and a second hop to a lane's (the
        embedded Brain's socket does this, gateway/frames/processes.py). False, and nothing
        run, when every thread is taken (the call would wait behind other turns) or the pool
        is stopping: the caller runs `call` its usual way."""
        if self.stopping.is_set():
            return False
        try:
            return self._submit(self._call_then_drive, call, done, if_free=True) is not None
        except RuntimeError:  # shut down meanwhile
            return False

    def _submit(
        self, fn: Callable[..., None], *args: Any, if_free: bool = False, **kwargs: Any
    ) -> Future[None] | None:
        """Run `fn` in the pool, counted in `_in_flight` until it ends; with `if_free`, only
        if a thread is free to start it now (None otherwise)."""
        with self._lock:
            if if_free and self._in_flight >= self._threads:
                return None
            self._in_flight += 1
        try:
            return self._executor.submit(self._counted, fn, *args, **kwargs)
        except BaseException:
            with self._lock:
                self._in_flight -= 1
            raise

    def _counted(self, fn: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _call_then_drive(
        self, call: Callable[[], T], done: Callable[[T | None, BaseException | None], None]
    ) -> None:
        for process_id in self._collect_wakes(call, done):
            if self.stopping.is_set():
                break  # not driven: its message stays pending for recovery's sweep
            self._run(process_id)

    def _collect_wakes(
        self, call: Callable[[], T], done: Callable[[T | None, BaseException | None], None]
    ) -> list[int]:
        """Run `call` with the lane wakes it makes kept back, tell `done`; the wakes."""
        wakes: list[int] = []
        self._local.wakes = wakes
        close_old_connections()
        try:
            result: T | None = call()
            error: BaseException | None = None
        except BaseException as exc:
            # The wakes stay: a transaction the call committed before it failed woke them.
            result, error = None, exc
        finally:
            self._local.wakes = None
        try:
            done(result, error)
        except Exception:
            # Its caller is gone (a closed socket's loop): what the call stored stays stored.
            log.exception("the reply to a call in a lane thread failed")
        return wakes

    def _run(self, process_id: int, *, start: bool = False) -> None:
        from processes.lane.tasks import drive_lane_task, start_process_task

        if not start:
            with self._lock:
                self._queued.discard(process_id)
        try:
            # The task's own body (`run`, the function it decorates), without Task.apply's
            # eager-result and tracing machinery, which cost as much as a turn's own work, or
            # the shared task's proxy and request stack, which a body that reads no request
            # has no use for.
            if start:
                start_process_task.run(process_id)
            else:
                drive_lane_task.run(process_id)
        except Exception:
            log.exception("lane tp_%s failed", process_id)
        finally:
            # Each pool thread keeps its own connection up to CONN_MAX_AGE; drop it when it is
            # older than that or broken, as Django does at the end of a request.
            close_old_connections()

    def shutdown(self, wait: bool = True) -> None:
        """Stop taking work; running turns stop at their next boundary."""
        self.stopping.set()
        self._executor.shutdown(wait=wait, cancel_futures=True)


_worker: InProcessWorker | None = None
# The worker being shut down: while its running turns finish, a wake or a child's start they
# make goes to it (and is refused, to be picked up by recovery), not to a new pool that nobody
# would shut down.
_closing: InProcessWorker | None = None
_worker_lock = threading.Lock()


def get_worker() -> InProcessWorker:
    global _worker
    with _worker_lock:
        if _closing is not None:
            return _closing
        if _worker is None or _worker.stopping.is_set():
            _worker = InProcessWorker(settings.VANCETOPE_INPROCESS_WORKER_THREADS)
        return _worker


def shutdown_worker(wait: bool = True) -> None:
    """Stop the pool taking work; with `wait`, return once its running turns are over (no
    thread of it touches the database afterwards)."""
    global _worker, _closing
    with _worker_lock:
        worker, _worker = _worker, None
        if worker is None:
            return
        _closing = worker
        worker.stopping.set()
    try:
        worker.shutdown(wait=wait)
    finally:
        with _worker_lock:
            _closing = None


# Set when the hosting process (a Celery worker, the Brain) begins a warm shutdown.
_process_stopping = threading.Event()


def request_stop() -> None:
    """Running turns in this OS process stop at their next boundary; their messages stay
    pending and another worker (or this one after a restart) answers them."""
    _process_stopping.set()


def is_stopping() -> bool:
    """Whether running turns should leave at their next boundary: the hosting process is
    stopping, or the pool is (`shutdown_worker` takes it out of `_worker` first, so look at
    the one closing too)."""
    if _process_stopping.is_set() or _closing is not None:
        return True
    worker = _worker
    return worker is not None and worker.stopping.is_set()
