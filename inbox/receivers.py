"""The signals the inbox receives from processes/ (processes/signals.py), connected on import
from InboxConfig.ready()."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.dispatch import receiver

from inbox.asking import ask_about_call, ask_for_root
from inbox.services import take_back_items
from processes import signals
from processes.actions.undo import TakenBack
from processes.models import ThinkProcess
from processes.states import Status
from vancetope.tools.models import ToolCall


@receiver(signals.turn_undone, sender=ThinkProcess)
def turn_undone(
    sender: Any, *, process: ThinkProcess, since: datetime, by: Any, **kwargs: Any
) -> TakenBack:
    """An undo of a turn dismisses the items the turn posted that are still OPEN."""
    return take_back_items(process, since, by)


@receiver(signals.process_settled, sender=ThinkProcess)
def process_settled(sender: Any, *, process: ThinkProcess, status: str, **kwargs: Any) -> None:
    """A root process that went BLOCKED with a question: its person gets it as an item."""
    if status == Status.BLOCKED and process.parent_id is None:
        ask_for_root(process)


@receiver(signals.call_uncertain, sender=ThinkProcess)
def call_uncertain(sender: Any, *, process: ThinkProcess, call: ToolCall, **kwargs: Any) -> None:
    """A call the Brain's stop left uncertain: its person is asked whether to run it again."""
    ask_about_call(process, call)
