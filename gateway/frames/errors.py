"""How a refusal reaches the client: as the error frame of the frame that caused it."""

from __future__ import annotations

import logging

from vancetope.errors import BadRequest, BrainError

log = logging.getLogger(__name__)


def as_brain_error(exc: Exception, what: str) -> BrainError:
    """The error a client is told: a BrainError as it is; anything else is logged here and
    reported as an internal error."""
    if isinstance(exc, BrainError):
        return exc
    log.error(what, exc_info=exc)
    return BrainError("internal error; see the Brain's log")


def in_frame(exc: BadRequest) -> BadRequest:
    """A field the service names (`answer.decision`) as the frame spells it
    (`data.answer.decision`)."""
    if exc.field is None:
        return exc
    return BadRequest(f"data.{exc.message}", error=exc.error, field=f"data.{exc.field}")
