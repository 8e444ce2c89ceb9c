"""The channel layers: the embedded one, whose sends from worker threads reach receivers on the
server loop, and channels_redis' pub/sub layer of the distributed runtime, as the consumer relies
on it."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings

from vancetope.infra.channel_layer import ThreadSafeInMemoryChannelLayer


async def test_group_send_from_another_thread_wakes_the_receiver_promptly():
    layer = ThreadSafeInMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("session.1", channel)
    receiving = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0.01)  # the receiver is now waiting on this loop

    def send_from_thread() -> None:
        asyncio.run(layer.group_send("session.1", {"type": "session.event", "n": 1}))

    sender = threading.Thread(target=send_from_thread)
    sender.start()
    message = await asyncio.wait_for(receiving, timeout=2)
    sender.join()
    assert message == {"type": "session.event", "n": 1}


class Marker:
    def __init__(self, items: list[int]) -> None:
        self.items = items


async def test_each_member_gets_a_copy_of_a_group_message_that_no_one_else_holds():
    layer = ThreadSafeInMemoryChannelLayer()
    first, second = await layer.new_channel(), await layer.new_channel()
    for channel in (first, second):
        await layer.group_add("session.1", channel)
    frames = [(1, "one"), (2, "two")]
    marker = Marker([1])
    message = {"type": "session.events", "frames": frames, "nested": {"list": [1]}, "m": marker}
    # when a batch is sent, and the sender then changes what it sent
    await layer.group_send("session.1", message)
    frames.append((3, "three"))
    message["nested"]["list"].append(2)
    marker.items.append(2)
    got = [await layer.receive(first), await layer.receive(second)]
    # then each member got the message as it was sent, in containers of its own (as
    # deepcopy gives them; an object of another kind is deep-copied)
    for received in got:
        assert received["frames"] == [(1, "one"), (2, "two")]
        assert received["nested"] == {"list": [1]}
        assert received["m"].items == [1]
    got[0]["nested"]["list"].append(9)
    assert got[1]["nested"]["list"] == [1]
    assert got[0]["frames"] is not got[1]["frames"]


async def test_groups_change_while_another_thread_sends_without_errors():
    layer = ThreadSafeInMemoryChannelLayer(capacity=100_000)
    reader = await layer.new_channel()
    await layer.group_add("session.1", reader)
    errors: list[BaseException] = []
    stop = threading.Event()

    def keep_sending() -> None:
        async def send_many() -> None:
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    await layer.group_send("session.1", {"type": "x", "n": n})
                except BaseException as exc:  # the test is about any error at all
                    errors.append(exc)
                await asyncio.sleep(0)

        asyncio.run(send_many())

    sender = threading.Thread(target=keep_sending)
    sender.start()
    for index in range(3000):
        extra = f"specific.extra!{index}"
        await layer.group_add("session.1", extra)
        await layer.group_add(f"other.{index}", extra)
        await layer.group_discard("session.1", extra)
        await layer.group_discard(f"other.{index}", extra)
        if index % 100 == 0:
            await asyncio.sleep(0)
    stop.set()
    sender.join(timeout=10)
    assert errors == []


async def test_a_full_group_member_drops_its_oldest_message_and_keeps_the_newest():
    # given: a socket's channel with room for two messages that nobody reads yet
    layer = ThreadSafeInMemoryChannelLayer(capacity=2)
    channel = await layer.new_channel()
    await layer.group_add("session.1", channel)
    # when: three events are sent to its group, from this loop and from another thread
    await layer.group_send("session.1", {"type": "session.events", "n": 1})
    await layer.group_send("session.1", {"type": "session.events", "n": 2})
    sender = threading.Thread(
        target=lambda: asyncio.run(
            layer.group_send("session.1", {"type": "session.events", "n": 3})
        )
    )
    sender.start()
    sender.join()
    # then: the newest arrives (the socket sees the gap before it and fills it from the
    # database); only the oldest was dropped
    assert (await layer.receive(channel))["n"] == 2
    assert (await layer.receive(channel))["n"] == 3


async def test_group_send_now_from_a_plain_thread_wakes_the_receiver_promptly():
    # given: a socket waiting on this loop
    layer = ThreadSafeInMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("session.1", channel)
    receiving = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0.01)
    # when: a lane thread, which has no event loop, sends to its group
    sender = threading.Thread(
        target=layer.group_send_now, args=("session.1", {"type": "session.events", "n": 1})
    )
    sender.start()
    sender.join()
    # then
    assert await asyncio.wait_for(receiving, timeout=2) == {"type": "session.events", "n": 1}


async def test_a_send_from_another_loop_wakes_the_receiver_on_its_own_loop():
    layer = ThreadSafeInMemoryChannelLayer()
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0.01)
    sender = threading.Thread(
        target=lambda: asyncio.run(layer.send(channel, {"type": "direct", "n": 1}))
    )
    sender.start()
    sender.join()
    assert await asyncio.wait_for(receiving, timeout=2) == {"type": "direct", "n": 1}


async def test_a_message_sent_before_anyone_receives_waits_in_the_channel():
    # given: a send from a plain thread to a channel no loop has received on yet
    layer = ThreadSafeInMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("session.1", channel)
    sender = threading.Thread(target=layer.group_send_now, args=("session.1", {"type": "x"}))
    sender.start()
    sender.join()
    # when / then: the first receive gets it; a group nobody is in takes a send quietly
    assert await asyncio.wait_for(layer.receive(channel), timeout=1) == {"type": "x"}
    layer.group_send_now("session.nobody", {"type": "x"})


async def test_a_direct_send_to_a_full_channel_on_its_loop_is_refused_as_channels_does():
    layer = ThreadSafeInMemoryChannelLayer(capacity=1)
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "x", "n": 1})
    with pytest.raises(ChannelFull):
        await layer.send(channel, {"type": "x", "n": 2})
    assert (await layer.receive(channel))["n"] == 1


async def test_a_handed_over_send_to_a_full_channel_drops_its_oldest():
    # given: a full channel whose receiver has received on this loop (and has more to read)
    layer = ThreadSafeInMemoryChannelLayer(capacity=2)
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "x", "n": 0})
    await layer.send(channel, {"type": "x", "n": 1})
    assert (await layer.receive(channel))["n"] == 0
    await layer.send(channel, {"type": "x", "n": 2})
    # when: another thread sends to it (handed over to this loop, where it must not fail)
    sender = threading.Thread(
        target=lambda: asyncio.run(layer.send(channel, {"type": "x", "n": 3}))
    )
    sender.start()
    sender.join()
    await asyncio.sleep(0.05)  # the hand-over runs on this loop
    # then
    assert [(await layer.receive(channel))["n"] for _ in range(2)] == [2, 3]
    assert layer.channels == {}


async def test_the_expiry_scan_runs_at_most_once_a_second(monkeypatch):
    # given: channels' scan, counted
    scans: list[float] = []
    monkeypatch.setattr(InMemoryChannelLayer, "_clean_expired", lambda self: scans.append(1))
    layer = ThreadSafeInMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("session.1", channel)
    # when: many group sends and receives within a second
    for n in range(50):
        await layer.group_send("session.1", {"type": "x", "n": n})
        await layer.receive(channel)
    # then: one scan
    assert len(scans) == 1


async def test_flush_forgets_channels_groups_and_receiver_loops():
    layer = ThreadSafeInMemoryChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("session.1", channel)
    await layer.send(channel, {"type": "x"})
    await layer.receive(channel)
    await layer.send(channel, {"type": "x"})
    await layer.flush()
    assert (layer.channels, layer.groups, layer._receiver_loops) == ({}, {}, {})


async def test_an_expired_message_is_not_delivered():
    # given: a channel whose messages expire after one second, holding one that has expired
    layer = ThreadSafeInMemoryChannelLayer(expiry=1)
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "session.events", "n": 1})
    await layer.receive(channel)  # a receive (and its expiry scan) just before
    await layer.send(channel, {"type": "session.events", "n": 2})
    await asyncio.sleep(2.1)
    # when: a newer one is sent and the socket receives
    await layer.send(channel, {"type": "session.events", "n": 3})
    # then: only the newer one arrives
    assert (await asyncio.wait_for(layer.receive(channel), timeout=1))["n"] == 3


# --- the Redis layer of the distributed runtime (CI runs these on Redis) --------------------------

needs_redis = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="needs Redis: set REDIS_URL (.ci/run does)"
)


@pytest.fixture
async def redis_layers() -> AsyncIterator[Callable[[], RedisPubSubChannelLayer]]:
    """The Redis layer of the settings, on a prefix of this test's own, as separate Brain
    processes would hold it; their connections are closed afterwards."""
    prefix = f"vt_test_{uuid.uuid4().hex[:12]}"
    made: list[RedisPubSubChannelLayer] = []

    def make() -> RedisPubSubChannelLayer:
        layer = RedisPubSubChannelLayer(hosts=[os.environ["REDIS_URL"]], prefix=prefix)
        made.append(layer)
        return layer

    yield make
    for layer in made:
        await layer.flush()


async def receive(layer: RedisPubSubChannelLayer, channel: str) -> dict[str, Any]:
    return await asyncio.wait_for(layer.receive(channel), timeout=5)


async def receives_nothing(layer: RedisPubSubChannelLayer, channel: str) -> bool:
    try:
        await asyncio.wait_for(layer.receive(channel), timeout=0.3)
    except TimeoutError:
        return True
    return False


@needs_redis
def test_the_distributed_runtime_uses_channels_redis_pubsub_layer():
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"] == (
        "channels_redis.pubsub.RedisPubSubChannelLayer"
    )


@needs_redis
async def test_redis_group_send_reaches_every_member_in_order_and_no_one_else(redis_layers):
    # given: a group with two sockets of one Brain and one of another, and a socket outside it
    brain_a, brain_b = redis_layers(), redis_layers()
    a1, a2, outsider = [await brain_a.new_channel() for _ in range(3)]
    b1 = await brain_b.new_channel()
    for channel, layer in ((a1, brain_a), (a2, brain_a), (b1, brain_b)):
        await layer.group_add("session.1", channel)
    # when: three batches are sent to the group
    for n in (1, 2, 3):
        await brain_b.group_send("session.1", {"type": "session.events", "n": n})
    # then: each member gets all three, in order; the outsider gets nothing
    for layer, channel in ((brain_a, a1), (brain_a, a2), (brain_b, b1)):
        assert [(await receive(layer, channel))["n"] for _ in range(3)] == [1, 2, 3]
    assert await receives_nothing(brain_a, outsider)


@needs_redis
async def test_a_redis_group_message_reaches_only_the_sockets_listening_when_it_is_sent(
    redis_layers,
):
    # given: a socket that joins its session's group only after a first batch was sent, and
    # one that leaves it
    brain, sender = redis_layers(), redis_layers()
    late, leaving = await brain.new_channel(), await brain.new_channel()
    await brain.group_add("session.1", leaving)
    await sender.group_send("session.1", {"type": "session.events", "n": 1})
    assert (await receive(brain, leaving))["n"] == 1
    await brain.group_add("session.1", late)
    await brain.group_discard("session.1", leaving)
    # when
    await sender.group_send("session.1", {"type": "session.events", "n": 2})
    # then: the late one gets only what came after it joined (it reads the rest from the
    # database), the one that left gets nothing more
    assert (await receive(brain, late))["n"] == 2
    assert await receives_nothing(brain, late)
    assert await receives_nothing(brain, leaving)
