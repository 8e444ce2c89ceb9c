"""Public ids: a type prefix and the row's primary key (`tp_12`), never a bare number."""

from __future__ import annotations

from vancetope.errors import NotFound


def public_id(prefix: str, pk: int | None) -> str:
    return f"{prefix}_{pk}"


def parse_public_id(prefix: str, value: str | int | None, what: str) -> int:
    """Return the primary key in `tp_12`; anything else is a 404 naming what was looked for."""
    text = str(value or "")
    head, _, tail = text.partition("_")
    if head != prefix or not tail.isdigit():
        raise NotFound(f"{what} {text!r} not found (ids look like {prefix}_12)")
    return int(tail)
