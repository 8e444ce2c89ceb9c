"""The embedded channel layer: sends from worker threads reach receivers on the server loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from vancetope.channel_layer import ThreadSafeInMemoryChannelLayer

pytestmark = pytest.mark.asyncio


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
