"""The channel layer of the embedded Brain: in memory, and it may be sent to from any thread
(the distributed runtime uses channels_redis' RedisPubSubChannelLayer as it is).

The embedded Brain drives lanes in worker threads, while the consumers wait on the server's
loop. Channels' InMemoryChannelLayer wakes a waiting receiver only when the sender runs on the
receiver's loop, so a send from another thread is handed over to the receiver's loop with
call_soon_threadsafe.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

log = logging.getLogger(__name__)


# The types a message shares between its sender and its receivers as they are.
_SHARED = frozenset({str, bytes, int, float, bool, type(None)})


def copy_message(value: Any) -> Any:
    """What deepcopy gives (no receiver shares a dict or list with the sender or another
    receiver, as channels' layer promises), for the values a channel message holds (msgpack's:
    dicts, lists, tuples, text, bytes, numbers, None): text and numbers are shared, being
    immutable, and containers copied, without deepcopy's memo and dispatch for every value.
    Anything else goes to deepcopy. An event batch is a list of (seq, frame text) pairs."""
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind is dict:
        return {key: copy_message(item) for key, item in value.items()}
    if kind is list:
        return [copy_message(item) for item in value]
    if kind is tuple:
        return tuple([copy_message(item) for item in value])
    return deepcopy(value)


class ThreadSafeInMemoryChannelLayer(InMemoryChannelLayer):
    # Channels' layer looks through every channel and group for expired entries on every
    # receive and group send; with a thousand sockets that scan cost more than the message.
    # Messages expire after a minute and memberships after a day: a scan a second is enough.
    clean_interval = 1.0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._next_clean = 0.0
        self._receiver_loops: dict[str, asyncio.AbstractEventLoop] = {}
        # Orders "receiver registers its loop" against "sender decides how to deliver", so a
        # sender never touches a queue another loop is already waiting on.
        self._loops_lock = threading.Lock()
        # Groups are changed on the server's loop and read by senders in other threads.
        self._groups_lock = threading.RLock()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        self._send(channel, message, self._put)

    def _send(
        self, channel: str, message: dict[str, Any], put: Callable[[str, dict[str, Any]], None]
    ) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        with self._loops_lock:
            loop = self._receiver_loops.get(channel)
            if loop is not None and loop is not current and not loop.is_closed():
                loop.call_soon_threadsafe(self._put_or_drop, channel, copy_message(message))
                return
            put(channel, copy_message(message))

    def _queue(self, channel: str) -> asyncio.Queue[Any]:
        # Not setdefault(channel, Queue(…)): that builds a queue on every call.
        queue = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
        return queue

    def _put(self, channel: str, message: dict[str, Any]) -> None:
        queue = self._queue(channel)
        try:
            queue.put_nowait((time.time() + self.expiry, message))
        except asyncio.QueueFull as exc:
            raise ChannelFull(channel) from exc

    def _put_or_drop(self, channel: str, message: dict[str, Any]) -> None:
        """Delivery that must not fail (handed over from another thread, or to a group): a
        full receiver drops its OLDEST message to take the new one. The newest event always
        arrives, so a socket sees the gap before it and refills it from the database; had the
        newest been dropped, a session's last events would never reach the socket."""
        try:
            self._put(channel, message)
        except ChannelFull:
            queue = self.channels[channel]
            queue.get_nowait()
            queue.put_nowait((time.time() + self.expiry, message))
            log.warning("channel %s is full; its oldest message was dropped", channel)

    async def group_add(self, group: str, channel: str) -> None:
        with self._groups_lock:
            await super().group_add(group, channel)

    async def group_discard(self, group: str, channel: str) -> None:
        with self._groups_lock:
            await super().group_discard(group, channel)

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_clean:
            return
        with self._groups_lock:
            self._next_clean = now + self.clean_interval
            super()._clean_expired()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.group_send_now(group, message)

    def group_send_now(self, group: str, message: dict[str, Any]) -> None:
        """group_send from any thread, with or without an event loop: each member's copy is
        handed to its receiver's loop. Never waits, so a lane thread calls it directly."""
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        with self._groups_lock:
            self._clean_expired()
            members = list(self.groups.get(group, {}))
        for channel in members:
            self._send(channel, message, self._put_or_drop)

    async def receive(self, channel: str) -> dict[str, Any]:
        """As channels' own (an emptied channel's queue is dropped), with this loop registered
        as the channel's receiver for senders in other threads."""
        self.require_valid_channel_name(channel)
        self._clean_expired()
        with self._loops_lock:
            self._receiver_loops[channel] = asyncio.get_running_loop()
        queue = self._queue(channel)
        try:
            _, message = await queue.get()
        finally:
            if queue.empty():
                self.channels.pop(channel, None)
            with self._loops_lock:
                if channel not in self.channels:
                    self._receiver_loops.pop(channel, None)
        return message  # type: ignore[no-any-return]

    async def flush(self) -> None:
        await super().flush()
        self._receiver_loops = {}
