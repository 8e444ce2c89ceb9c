"""Domain errors with the status code every interface (WebSocket, REST, MCP, A2A, admin)
reports them as, and the signal that ends a turn.

A refusal of bad input is one `BadRequest` naming its field (`BadRequest.naming("action.type",
"must be one of …")`, or `BadRequest.from_validation` for a pydantic model's first problem):
every face renders `code`, `error`, `message` and `field` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from django import forms
from pydantic import ValidationError


class BrainError(Exception):
    code = 500
    error = "internal"

    def __init__(self, message: str, *, error: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        # The input it is about (`params`, `data.text`), when there is one: REST lists it
        # under `fields`, a frame's error names it as `field`.
        self.field = field
        if error:
            self.error = error


class BadRequest(BrainError):
    code = 400
    error = "bad-request"

    @classmethod
    def naming(cls, field: str, message: str, *, error: str = "invalid") -> BadRequest:
        """A 400 about one input: `field: message`, with `field` set for every face."""
        return cls(f"{field}: {message}", error=error, field=field)

    @classmethod
    def from_validation(cls, exc: ValidationError, *, under: str = "") -> BadRequest:
        """A 400 naming the first problem of a pydantic model's validation, its path under
        `under` (`action` + `constraints.maxTasks` is `action.constraints.maxTasks`)."""
        path, message = validation_problem(exc)
        field = ".".join(part for part in (under, path) if part) or "body"
        return cls.naming(field, message)


def validation_problem(exc: ValidationError) -> tuple[str, str]:
    """The first problem of a pydantic validation as (dotted path, message): list items are
    their index (`phases.1.gate`), a validator's own text loses pydantic's "Value error, "
    prefix, and function validators' wrappers are left out of the path."""
    first = exc.errors()[0]
    parts = [str(part) for part in first["loc"] if not str(part).startswith("function-")]
    return ".".join(parts), str(first["msg"]).removeprefix("Value error, ")


def form_error(
    exc: BrainError, fields: Mapping[str, str], *, default: str | None = None
) -> forms.ValidationError:
    """A refusal as an admin form shows it: on the form field its `field` begins with
    (`fields`: the refusal's top-level name → the form's field; `action.input.topic` is on
    `action`), else on `default`, else on the form as a whole."""
    top = (exc.field or "").split(".", 1)[0]
    where = fields.get(top, default)
    return forms.ValidationError({where: exc.message} if where else exc.message)


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


class TurnControl(BaseException):  # noqa: N818 (not an error: a signal to leave the turn)
    """Not an error: the turn must end at this boundary (an interrupt arrived, the lane's
    lease was lost, a budget is used up, a client tool is needed). A BaseException, as
    KeyboardInterrupt is, so that an engine's or a tool's `except Exception` cannot swallow it:
    only the lane (processes/lane/) handles its subclasses, and the entry points that run a
    lane or a lifecycle call (processes/lane/tasks.py, processes/actions/lifecycle.py) make
    what escapes them an error or a log line."""
