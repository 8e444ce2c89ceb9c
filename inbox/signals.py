"""What the inbox tells other apps, as Django signals: the inbox imports none of the apps that
listen; each connects its receivers in its AppConfig.ready(). Both are sent with
`sender=InboxItem` and keyword arguments only."""

from __future__ import annotations

from django.dispatch import Signal

# A newly posted `item`, after its commit. Sent robustly: a receiver's failure is logged and
# the item stays posted (triggers/ notifies the owner of a run whose task asks for approval;
# the MCP face tells the person's listen streams).
item_posted = Signal()

# The answer to an item no process posted (a system client's: the brain linker's APPROVAL,
# whose origin is its run), inside the answer's transaction: `item`, `answer` (as stored),
# `by` (who answered). The receiver whose item it is (by its `origin_public_id`; triggers/
# takes `run_`) settles the answer and returns the item's note ("" if none); every other
# returns None. The first note, in connection order, is the item's; a receiver's failure fails
# the answer.
origin_answered = Signal()
