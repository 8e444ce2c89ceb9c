"""The signals triggers/ receives, connected on import from TriggersConfig.ready(): processes/
and inbox/ never import triggers/ (processes/signals.py, inbox/signals.py).

Receivers of one signal run in the order they are connected, so this module's order is theirs:
a run's process_settled comes before a cron continuation's, as it did when these were the
hand-made listener lists (the two touch different processes, so nothing depends on it yet)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from inbox import signals as inbox_signals
from inbox.models import InboxItem
from processes import signals as process_signals
from processes.lane.wake_listeners import Wake
from processes.models import ThinkProcess
from protocol.outbound import Event
from triggers.cron import brain_linker as linker
from triggers.cron import fire as cron_fire
from triggers.runs import approvals
from triggers.runs import human as human_runs
from triggers.runs import system as runs


@receiver(process_signals.process_settled, sender=ThinkProcess)
def run_process_settled(
    sender: Any, *, process: ThinkProcess, status: str, reason: str, **kwargs: Any
) -> None:
    """A run's process came to rest: its run log may be finished (triggers/runs/system.py)."""
    runs.process_settled(process, status, reason)


@receiver(process_signals.process_settled, sender=ThinkProcess)
def continuation_settled(
    sender: Any, *, process: ThinkProcess, status: str, reason: str, **kwargs: Any
) -> None:
    """A cron job's process_continue: its run ends when its process settles."""
    cron_fire.continuation_settled(process, status, reason)


@receiver(process_signals.wake_committed, sender=ThinkProcess)
def wake_committed(
    sender: Any, *, wake: Wake, status: str, reason: str, **kwargs: Any
) -> list[Event]:
    """A person's runs are written by the lane's commits (triggers/runs/human.py)."""
    return human_runs.wake_committed(wake, status, reason)


@receiver(process_signals.quota_turn, sender=ThinkProcess)
def approval_posted(
    sender: Any, *, process: ThinkProcess, quota: dict[str, Any], **kwargs: Any
) -> str | None:
    """A posted APPROVAL item ends a cron job's continuation early (stopOnApproval)."""
    return cron_fire.approval_posted(process, quota)


@receiver(inbox_signals.item_posted, sender=InboxItem)
def item_posted(sender: Any, *, item: InboxItem, **kwargs: Any) -> None:
    """Approvals of a run's tasks notify its owner (triggers/approvals.py)."""
    approvals.item_posted(item)


@receiver(inbox_signals.origin_answered, sender=InboxItem)
def origin_answered(
    sender: Any, *, item: InboxItem, answer: dict[str, Any], by: Any, **kwargs: Any
) -> str | None:
    """The brain linker's approvals (posted by no process, their origin a `run_`)."""
    if not item.origin_public_id.startswith(linker.ORIGIN_PREFIX):
        return None
    return linker.approval_answered(item, answer, by)
