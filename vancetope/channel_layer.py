"""The Brain's channel layers: in memory for the embedded Brain, Redis for the distributed one.

The in-memory layer may be sent to from any thread. The embedded Brain drives lanes in worker
threads, while the consumers wait on the server's loop. Channels' InMemoryChannelLayer wakes a
waiting receiver only when the sender runs on the receiver's loop, so a send from another
thread is handed over to the receiver's loop with call_soon_threadsafe.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from copy import deepcopy
from typing import Any

import channels_redis.core
from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

log = logging.getLogger(__name__)


class ThreadSafeInMemoryChannelLayer(InMemoryChannelLayer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._receiver_loops: dict[str, asyncio.AbstractEventLoop] = {}
        # Orders "receiver registers its loop" against "sender decides how to deliver", so a
        # sender never touches a queue another loop is already waiting on.
        self._loops_lock = threading.Lock()
        # Groups are changed on the server's loop and read by senders in other threads.
        self._groups_lock = threading.RLock()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        await self._send(channel, message, self._put)

    async def _send(
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
                loop.call_soon_threadsafe(self._put_or_drop, channel, deepcopy(message))
                return
            put(channel, deepcopy(message))

    def _put(self, channel: str, message: dict[str, Any]) -> None:
        queue = self.channels.setdefault(channel, asyncio.Queue(maxsize=self.get_capacity(channel)))
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
        with self._groups_lock:
            super()._clean_expired()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        with self._groups_lock:
            self._clean_expired()
            members = list(self.groups.get(group, {}))
        for channel in members:
            await self._send(channel, message, self._put_or_drop)

    async def receive(self, channel: str) -> dict[str, Any]:
        with self._loops_lock:
            self._receiver_loops[channel] = asyncio.get_running_loop()
        try:
            return await super().receive(channel)
        finally:
            with self._loops_lock:
                if channel not in self.channels:
                    self._receiver_loops.pop(channel, None)

    async def flush(self) -> None:
        await super().flush()
        self._receiver_loops = {}


# One round trip delivers a group message to every channel key of a Redis server: expired
# messages go, a full key drops its OLDEST messages (as the in-memory layer above does), the new
# message goes in with the key's expiry renewed. Returns how many messages were dropped.
#   KEYS: channel keys; ARGV: one message per key, then one capacity per key, then now, expiry.
_GROUP_SEND_LUA = """
local n = #KEYS
local now = tonumber(ARGV[2 * n + 1])
local expiry = tonumber(ARGV[2 * n + 2])
local dropped = 0
for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, math.floor(now) - expiry)
    local over = redis.call('ZCARD', KEYS[i]) - tonumber(ARGV[n + i]) + 1
    if over > 0 then
        redis.call('ZPOPMIN', KEYS[i], over)
        dropped = dropped + over
    end
    redis.call('ZADD', KEYS[i], now, ARGV[i])
    redis.call('EXPIRE', KEYS[i], expiry)
end
return dropped
"""


class RedisChannelLayer(channels_redis.core.RedisChannelLayer):
    """channels_redis, with a group send in two round trips instead of four and, when a
    channel is full, its oldest message dropped instead of the newest.

    Every event batch of a session goes out by group send. channels_redis spends four round
    trips on one (expire members, read members, expire each key's messages, then a script that
    adds the message), and a full key refuses the new message: a socket would then never get a
    session's last events. Here the members are expired and read in one pipeline, and one
    script (EVALSHA) per Redis server does the rest, dropping the oldest message of a full key.
    The newest event always arrives, so a socket sees the gap before it and refills it from the
    database."""

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert self.require_valid_group_name(group), "Group name not valid"
        key = self._group_key(group)
        connection = self.connection(self.consistent_hash(group))
        async with connection.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, min=0, max=int(time.time()) - self.group_expiry)
            pipe.zrange(key, 0, -1)
            _, members = await pipe.execute()
        if not members:
            return
        channel_names = [member.decode("utf8") for member in members]
        by_connection, messages, capacities = self._map_channel_keys_to_connection(
            channel_names, message
        )
        for index, channel_keys in by_connection.items():
            args = [messages[key] for key in channel_keys]
            args += [capacities[key] for key in channel_keys]
            args += [time.time(), int(self.expiry)]
            script = self.connection(index).register_script(_GROUP_SEND_LUA)
            dropped = await script(keys=channel_keys, args=args)
            if dropped:
                log.warning(
                    "%s oldest message(s) dropped from full channels of group %s", dropped, group
                )
