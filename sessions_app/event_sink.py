"""`ctx.events`: events to the session's client, stored and pushed in the order the engine
emits them.

Streamed text is coalesced: a delta goes out at once when `delta_interval` seconds have passed
since the sink last stored anything (so the first delta of a slow LLM is never held), otherwise
it is held and joined with the next ones. Held deltas go out with the next event, before a tool
runs (`store_held`), and at the commit. Whole messages (the assistant's answer, task trees) wait
for the commit, so a client never sees what a crash takes back.

Every event's data is built from its model in protocol/outbound.py; what a kernel
hands over as (name, data) through `emit` is checked against that model.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from django.db import transaction

from protocol.outbound import (
    ChatDeltaEvent,
    ChatMessageEvent,
    Event,
    NotificationEvent,
    TaskTreeEvent,
    event,
    event_from,
)
from sessions_app.events import emit_events


class EventSink:
    def __init__(
        self,
        session_id: int,
        process_public_id: str,
        delta_interval: float,
        opening: Callable[[], list[Event]] | None = None,
        *,
        keeps_chat: bool = True,
    ) -> None:
        self._session_id = session_id
        # A system client's session keeps no chat history: its chat-message events are not
        # stored (the conversation stays with the process).
        self._keeps_chat = keeps_chat
        self._process_id = process_public_id
        self._delta_interval = delta_interval
        # Run (inside the transaction) before the first events are stored; its events go
        # first. The lane starts its run this way (RUNNING).
        self._opening = opening
        self._held: list[Event] = []
        self._last_stored = -math.inf
        self.after_commit: list[Event] = []
        # Events a failed attempt at the same message already sent (see skip_repeats), and
        # every event this attempt sent or would have sent at once, in order.
        self._repeats: list[Event] = []
        self.announced: list[Event] = []

    def skip_repeats(self, events: list[Event]) -> None:
        """This attempt retries a message whose earlier attempts sent `events` at once (the
        user's chat-message, a notice): while it sends the same ones in the same order they are
        not sent again; from the first that differs on, everything is sent."""
        self._repeats = list(events)

    def emit(self, name: str, data: dict[str, Any]) -> None:
        """Store and push an event handed over as (name, data) now, checked against its
        model (the tool kernel sends its `tool-call` this way)."""
        self.emit_now(event_from(name, data))

    def emit_now(self, item: Event) -> None:
        """Store and push `item` now (with any held deltas before it)."""
        self.announced.append(item)
        if self._repeats:
            if self._repeats[0] == item:
                del self._repeats[0]
                return
            self._repeats = []
        self._held.append(item)
        self.store_held()

    def emit_after_commit(self, item: Event) -> None:
        self.after_commit.append(item)

    def chat_delta(self, text: str) -> None:
        if self._held and self._held[-1][0] == ChatDeltaEvent.name:
            name, data = self._held[-1]
            # Joined as the stored data: the text of one delta is still one string.
            self._held[-1] = (name, {**data, "text": data["text"] + text})
        else:
            self._held.append(event(ChatDeltaEvent(processId=self._process_id, text=text)))
        if time.monotonic() - self._last_stored >= self._delta_interval:
            self.store_held()

    def chat_message(self, role: str, text: str, *, at_once: bool = False) -> None:
        if not self._keeps_chat:
            return
        item = event(ChatMessageEvent(processId=self._process_id, role=role, text=text))
        if at_once:
            self.emit_now(item)
        else:
            self.emit_after_commit(item)

    def task_tree(self, tree: dict[str, Any]) -> None:
        # A turn that steers several reports (marvin's) sends the tree once, as the last left it.
        self.after_commit = [item for item in self.after_commit if item[0] != TaskTreeEvent.name]
        self.emit_after_commit(event(TaskTreeEvent(processId=self._process_id, tree=tree)))

    def notify(self, text: str, level: str = "info") -> None:
        self.emit_now(event(NotificationEvent(text=text, level=level)))

    def open(self) -> None:
        """Run the opening, if it has not run yet (inside the caller's transaction)."""
        opening, self._opening = self._opening, None
        if opening is not None:
            self._held[:0] = opening()

    def store_held(self) -> None:
        """Store and push the held events now (before anything else the client will see, and
        before the engine waits on an LLM or a tool)."""
        if not self._held and self._opening is None:
            return
        with transaction.atomic():
            self.open()
            held, self._held = self._held, []
            emit_events(self._session_id, held)
        self._last_stored = time.monotonic()

    def flush(self) -> None:
        """At the commit (inside its transaction): the held events, then the whole messages."""
        self.open()
        pending = [*self._held, *self.after_commit]
        self._held, self.after_commit = [], []
        emit_events(self._session_id, pending)
