"""Writing session events: numbered per session, stored for replay, then pushed to the socket.

The seq is taken under the session row's lock, so seq N+1 exists only once seq N is committed:
a socket that sees a gap can always fill it from the database (see the consumer).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

from channels.layers import get_channel_layer
from django.db import connection, transaction
from django.utils import timezone

from protocol.outbound import EVENT_MODELS, Event, UnknownEvent
from sessions_app.models import Session, SessionEvent, event_frame
from vancetope.infra import fastsql
from vancetope.infra.channel_layer import ThreadSafeInMemoryChannelLayer

log = logging.getLogger(__name__)

# An event on its way to the sockets: its seq and its frame as JSON text.
Frame = tuple[int, str]


def group_name(session_id: int) -> str:
    return f"session.{session_id}"


def reserve_seqs(session_id: int, count: int = 1) -> int:
    """Take the session's next `count` event numbers; returns the last one. The UPDATE holds
    the session row until the surrounding transaction commits, so numbers are handed out (and
    committed) in order. Events are work done for the session: its idle clock starts again."""
    last = fastsql.scalar(
        Session,
        "UPDATE {table} SET {last_seq} = {last_seq} + %s, {last_activity_at} = %s "
        "WHERE {id} = %s RETURNING {last_seq}",
        [count, connection.ops.adapt_datetimefield_value(timezone.now()), session_id],
    )
    if last is None:
        raise Session.DoesNotExist(f"session sess_{session_id} does not exist")
    return int(last)


def record_events(session_id: int, items: Sequence[Event]) -> list[Frame]:
    """Store events with consecutive seqs: one seq update and one insert, however many, as
    rows (no SessionEvent instances: a turn stores about six). Returns each as (seq, frame
    text): the frame as the socket sends it (SessionEvent.frame_text). Every event must be
    one docs/protocol.md names (a model in protocol/outbound.py); emitters build its data
    from that model."""
    if not items:
        return []
    for name, _ in items:
        if name not in EVENT_MODELS:
            raise UnknownEvent(f"no model for event {name!r}: add it to the outbound protocol")
    # Inside a turn's commit this joins the outer transaction (no savepoint per batch).
    with transaction.atomic(savepoint=False):
        first = reserve_seqs(session_id, len(items)) - len(items) + 1
        rows = [
            {"session_id": session_id, "seq": first + offset, "event": event, "data": data}
            for offset, (event, data) in enumerate(items)
        ]
        fastsql.insert_values(SessionEvent, rows)
    return [
        (first + offset, json.dumps(event_frame(first + offset, event, data)))
        for offset, (event, data) in enumerate(items)
    ]


class EventPusher:
    """One thread with its own event loop that sends frames to a channel layer that waits on the
    network (Redis), in the order they were handed over.

    Lanes and services run in plain threads. Pushing from them with async_to_sync would build a
    new event loop (and, with Redis, new connections) for every event, and from a thread that
    serves the ASGI loop it would wait on that loop, which hangs once the server stops. Here the
    caller never waits: the event is already stored, and a socket that misses a push fills the
    gap from the database.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._loop = asyncio.new_event_loop()
        self._queue: asyncio.Queue[tuple[int, list[Frame]]] | None = None
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="event-pusher", daemon=True
        )
        self._thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._queue = asyncio.Queue()
        sender = self._loop.create_task(self._send_in_order(self._queue))
        ready.set()
        try:
            self._loop.run_forever()
        finally:
            # Wind the loop down inside its own thread; a loop left running in a daemon
            # thread can crash the interpreter while it shuts down.
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                self._loop.run_until_complete(sender)
            self._loop.close()

    def stop(self, timeout: float = 2.0) -> None:
        """Send what is queued (waiting up to `timeout`), then end the thread."""

        async def drained() -> None:
            assert self._queue is not None
            await self._queue.join()

        if self._loop.is_closed():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(drained(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    async def _send_in_order(self, queue: asyncio.Queue[tuple[int, list[Frame]]]) -> None:
        while True:
            session_id, frames = await queue.get()
            try:
                layer = get_channel_layer()
                if layer is not None:
                    await layer.group_send(group_name(session_id), _batch(frames))
            except Exception:
                log.exception("could not push events to session %s", session_id)
            finally:
                queue.task_done()

    def push(self, session_id: int, frames: list[Frame]) -> None:
        assert self._queue is not None
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (session_id, frames))


def _batch(frames: list[Frame]) -> dict[str, Any]:
    """One channel-layer message per batch: a turn's events travel together."""
    return {"type": "session.events", "frames": frames}


_pusher: EventPusher | None = None
_pusher_lock = threading.Lock()


def push_frames(session_id: int, frames: list[Frame]) -> None:
    """Hand frames to every socket bound to the session (none bound is fine: they are
    stored)."""
    global _pusher
    layer = get_channel_layer()
    if isinstance(layer, ThreadSafeInMemoryChannelLayer):
        # The embedded layer never waits: it hands the batch to the sockets' loop itself, so
        # the caller's thread sends it, without a hop through the pusher thread.
        try:
            layer.group_send_now(group_name(session_id), _batch(frames))
        except Exception:
            log.exception("could not push events to session %s", session_id)
        return
    with _pusher_lock:
        # A forked worker process does not inherit the parent's pusher thread.
        if _pusher is None or _pusher.pid != os.getpid():
            _pusher = EventPusher()
            atexit.register(stop_pusher)
        pusher = _pusher
    pusher.push(session_id, frames)


def stop_pusher() -> None:
    """At shutdown: deliver what is queued and stop the pusher thread."""
    global _pusher
    with _pusher_lock:
        pusher, _pusher = _pusher, None
    if pusher is not None and pusher.pid == os.getpid():
        pusher.stop()


def emit_events(session_id: int, items: Sequence[Event]) -> list[Frame]:
    """Store the events, and push them (in order) once the surrounding transaction (if any)
    has committed. Returns them as (seq, frame text), as they are pushed."""
    # Serialized once, when stored, not once per socket: a batch is [(seq, frame text), …].
    frames = record_events(session_id, items)
    if frames:
        transaction.on_commit(lambda: push_frames(session_id, frames))
    return frames


def emit_event(session_id: int, event: str, data: dict[str, Any]) -> Frame:
    return emit_events(session_id, [(event, data)])[0]


def events_since(
    session_id: int, since_seq: int, until_seq: int | None = None
) -> list[SessionEvent]:
    """The stored events after `since_seq` (and before `until_seq`), but those of an undone
    turn (processes/actions/undo.py): a replay never shows what was taken back."""
    events = SessionEvent.objects.filter(session_id=session_id, seq__gt=since_seq, undone=False)
    if until_seq is not None:
        events = events.filter(seq__lt=until_seq)
    return list(events.order_by("seq"))
