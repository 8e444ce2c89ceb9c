"""The signals spaces/ receives from processes/ (processes/signals.py), connected on import
from SpacesConfig.ready(). Each costs nothing for a process that is no node's."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from processes import signals
from processes.models import ThinkProcess
from spaces import turn_end


@receiver(signals.process_settled, sender=ThinkProcess)
def node_settled(
    sender: Any, *, process: ThinkProcess, status: str, reason: str, **kwargs: Any
) -> None:
    """A node's turn ended: a dormant node is active now, a control turn that did not finish
    is unlocked, a return notice waiting for its resting parent is appended."""
    turn_end.node_settled(process, status, reason)


@receiver(signals.person_message, sender=ThinkProcess)
def refuse_read_only(sender: Any, *, process: ThinkProcess, **kwargs: Any) -> None:
    """A person's chat or steer to a node that is read-only now is a 409, nothing queued."""
    turn_end.refuse_read_only(process)
