"""Domain errors with the status code every interface (WebSocket, REST, admin) reports them as."""

from __future__ import annotations


class BrainError(Exception):
    code = 500
    error = "internal"

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if error:
            self.error = error


class BadRequest(BrainError):
    code = 400
    error = "bad-request"


class Unauthenticated(BrainError):
    code = 401
    error = "unauthenticated"


class Forbidden(BrainError):
    code = 403
    error = "forbidden"


class NotFound(BrainError):
    code = 404
    error = "not-found"


class Conflict(BrainError):
    """The call is not allowed in the current status; nothing was changed."""

    code = 409
    error = "conflict"


class TooLarge(BrainError):
    code = 413
    error = "too-large"


class Unavailable(BrainError):
    code = 503
    error = "unavailable"


class TurnControl(Exception):  # noqa: N818 (not an error: a signal to leave the turn)
    """Not an error: the turn must end at this boundary (an interrupt arrived, or the lane's
    lease was lost). Kernels that run code inside a turn (tools) let it pass untouched; the
    lane (processes/lane/) raises and handles its subclasses."""
