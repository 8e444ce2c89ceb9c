"""Setting values in tests, through the services every interface uses."""

from __future__ import annotations

from typing import Any

from vancetope.config import services
from vancetope.config.models import Scope
from vancetope.config.registry import get_key


def set_value(name: str, scope: Scope, row: Any, value: Any) -> None:
    """Store `value` for key `name` at the scope of `row` (a tenant, group, project or
    session) as an operator would (no role check)."""
    chain = services.chain_of(scope, row.pk)
    services.do_set(get_key(name), scope, row.pk, chain.tenant_id, value)


def unset_value(name: str, scope: Scope, row: Any) -> None:
    services.do_unset(name, scope, row.pk)
