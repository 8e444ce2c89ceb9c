"""Public ids: a type prefix and the row's primary key (`tp_12`), never a bare number."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from vancetope.errors import NotFound

if TYPE_CHECKING:
    from django.db.models import Model, QuerySet

M = TypeVar("M", bound="Model")

# Primary keys are signed 64-bit integers on every database.
MAX_PK = 2**63 - 1


def parse_whole_number(text: str, *, limit: int = MAX_PK) -> int | None:
    """`text` as a whole number >= 0 written in ASCII digits that fits `limit` (a signed 64-bit
    integer by default), else None. str.isdigit would take '²', '①' and '١' (read as 1)."""
    if not text or len(text) > len(str(limit)) or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= limit else None


def public_id_pattern(prefix: str) -> str:
    """The ids `prefix`_N as a pattern for the OpenAPI document: up to 18 ASCII digits, every
    number of which is a primary key (19 digits may be past MAX_PK)."""
    return f"^{prefix}_[0-9]{{1,18}}$"


def public_id(prefix: str, pk: int | None) -> str:
    return f"{prefix}_{pk}"


def parse_public_id(prefix: str, value: str | int | None, what: str) -> int:
    """Return the primary key in `tp_12`; anything else is a 404 naming what was looked for."""
    text = str(value or "")
    head, _, tail = text.partition("_")
    pk = parse_whole_number(tail) if head == prefix else None
    if pk is None:
        raise NotFound(f"{what} {text!r} not found (ids look like {prefix}_12)")
    return pk


def get_by_public_id(rows: QuerySet[M], prefix: str, value: str, what: str) -> M:
    """The row of `rows` (what the caller may see) with that public id; a malformed id, or one
    not among them (another tenant's, or none), is the same 404 naming what was looked for."""
    pk = parse_public_id(prefix, value, what)
    row = rows.filter(pk=pk).first()
    if row is None:
        raise NotFound(f"{what} {prefix}_{pk} not found")
    return row
