"""A failing receiver of the inbox's item_posted signal (inbox/signals.py) is its own failure:
it is logged and the item stays posted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from inbox import signals
from inbox.models import InboxItem, InboxStatus
from processes.models import ThinkProcess
from tests.support.inbox import approval

pytestmark = pytest.mark.django_db(transaction=True)


def failing_receiver(sender: Any, **kwargs: Any) -> None:
    raise RuntimeError("this receiver is broken")


@pytest.fixture
def broken_posted_receiver() -> Iterator[None]:
    signals.item_posted.connect(failing_receiver, sender=InboxItem)
    yield
    signals.item_posted.disconnect(failing_receiver, sender=InboxItem)


@pytest.mark.usefixtures("broken_posted_receiver")
def test_a_failing_posted_receiver_is_logged_and_the_item_stays_posted(
    origin: ThinkProcess, caplog: pytest.LogCaptureFixture
) -> None:
    # when an item is posted while a receiver of item_posted fails
    with caplog.at_level(logging.ERROR, logger="vancetope.dispatch"):
        item = approval(origin)
    # then the item is posted and OPEN, and the failure is logged naming the item
    assert InboxItem.objects.get(pk=item.pk).status == InboxStatus.OPEN
    [failure] = [r for r in caplog.records if r.name == "vancetope.dispatch"]
    assert failure.getMessage().startswith(f"{item.public_id}: a receiver")
    assert "this receiver is broken" in failure.getMessage()
