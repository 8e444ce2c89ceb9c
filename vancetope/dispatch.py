"""Django signals sent robustly: a receiver's failure is its own, so the sender goes on.

Django's `send_robust` logs each failure with its traceback (logger `django.dispatch`) but not
what it was about; this names the object too (`tp_12: a receiver (node_settled) failed`)."""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import Signal

log = logging.getLogger(__name__)


def send_robust_logged(signal: Signal, sender: Any, what: str, **named: Any) -> list[Any]:
    """Send `signal` robustly; log each receiver's failure naming `what` it was for (`tp_12`);
    the responses of the receivers that did not fail, in their order."""
    answers: list[Any] = []
    for receiver, response in signal.send_robust(sender, **named):
        if isinstance(response, Exception):
            # Without the traceback: django.dispatch has just logged it.
            log.error(
                "%s: a receiver (%s) failed: %r",
                what,
                getattr(receiver, "__qualname__", repr(receiver)),
                response,
            )
        else:
            answers.append(response)
    return answers
