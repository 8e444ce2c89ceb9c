"""Change notifications of the resources, over MCP's `subscriptions/listen` (the SDK's
listen stream): `notifications/resources/updated` for a process when it settles (a turn or a
lifecycle call ends it IDLE, BLOCKED, PAUSED, CLOSED, …) and for `vancetope://inbox` when an
item is posted for the person.

Each person has a bus of their own, so a stream only ever carries the person's own events;
a subscription to a process they cannot read is dropped from the acknowledged filter (as an
unknown URI, it never fires). The domain's signals (processes' `process_settled`, the inbox's
`item_posted`) are received in lane threads of this Brain process; the receivers hand the event
to the event loop. A process
run by a Celery worker settles in that worker: its clients see the change when they poll
(`process_get`), not as a notification.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp_types import SubscriptionsListenRequestParams, SubscriptionsListenResult

from inbox import signals as inbox_signals
from inbox.models import InboxItem
from mcp_face.identity import SCOPE_KEY
from mcp_face.resources import INBOX_URI, process_uri
from processes import queries
from processes import signals as process_signals
from processes.models import ThinkProcess
from vancetope.service_calls import call_service

log = logging.getLogger(__name__)
PROCESS_PREFIX = process_uri("")


class PersonalListen:
    """Serves `subscriptions/listen` with the SDK's ListenHandler on the person's own bus."""

    def __init__(self) -> None:
        self.buses: dict[int, InMemorySubscriptionBus] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        person: Any = getattr(ctx.request, "scope", {}).get(SCOPE_KEY)
        self.loop = asyncio.get_running_loop()
        wanted = params.notifications.resource_subscriptions or []
        allowed = await call_service(readable_uris, person, wanted)
        narrowed = params.notifications.model_copy(
            update={"resource_subscriptions": allowed or None}
        )
        bus = self.buses.setdefault(person.pk, InMemorySubscriptionBus())
        handler = ListenHandler(bus)
        return await handler(ctx, params.model_copy(update={"notifications": narrowed}))

    def publish(self, person_ids: set[int], uri: str) -> None:
        """From any thread of this process: tell these people's streams `uri` changed."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return  # nobody has listened yet
        for person_id in person_ids:
            bus = self.buses.get(person_id)
            if bus is not None:
                event = ResourceUpdated(uri=uri)
                asyncio.run_coroutine_threadsafe(bus.publish(event), loop)

    def process_settled(self, sender: Any, *, process: ThinkProcess, **kwargs: Any) -> None:
        # A settled receiver costs a turn no statement: nothing when nobody listens, and the
        # session's owner from the cached session facts (the lane holds no session row).
        if not self.buses:
            return
        facts = queries.session_facts(process.session_id)
        owners = {facts.owner_id if facts is not None else None, process.run_owner_id}
        self.publish({pk for pk in owners if pk is not None}, process_uri(process.public_id))

    def item_posted(self, sender: Any, *, item: InboxItem, **kwargs: Any) -> None:
        self.publish({item.user_id}, INBOX_URI)

    def listen_to_the_domain(self) -> None:
        # Weakly, as Django connects a bound method: a listen whose server is gone stops
        # receiving with it.
        process_signals.process_settled.connect(self.process_settled, sender=ThinkProcess)
        inbox_signals.item_posted.connect(self.item_posted, sender=InboxItem)


def readable_uris(person: Any, uris: list[str]) -> list[str]:
    """The URIs of `uris` the person may read: their inbox, the processes they read."""
    kept: list[str] = []
    for uri in uris:
        if uri == INBOX_URI:
            kept.append(uri)
            continue
        tail = uri.removeprefix(PROCESS_PREFIX) if uri.startswith(PROCESS_PREFIX) else ""
        head, _, number = tail.partition("_")
        if head == "tp" and number.isascii() and number.isdigit():
            if queries.readable_processes(person).filter(pk=int(number)).exists():
                kept.append(uri)
    return kept
