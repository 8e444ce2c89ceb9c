"""The scope cascade: each key's effective value, from the narrowest scope that sets it
(session → project → project group → tenant), else the key's default; and where it came from.

The lane reads a session's values once per settings revision and worker OS process
(`session_values`): the revision comes with the statement that takes the lane's lease, so a
turn whose revision is the cached one runs no statement for its settings, and a write anywhere
(which raises the revision) is seen by the next lease of every lane on every worker.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db.models import Q, Subquery

from vancetope.config import secrets
from vancetope.config.models import CASCADE, Scope, Setting, SettingsRevision
from vancetope.config.registry import SettingKey, all_keys, brain_keys, engine_keys, get_key
from vancetope.infra import revisions

DEFAULT = "default"
# Sessions whose stored values a worker keeps (least recently used go first).
CACHED_SESSIONS = 4096


@dataclass(frozen=True)
class Stored:
    """A stored value (a secret's in clear) and where it is set."""

    key: str
    scope: str
    scope_id: int
    value: Any


@dataclass(frozen=True)
class Resolved:
    """A key's effective value and the scope it came from (`default`: none sets it)."""

    key: SettingKey
    value: Any
    scope: str = DEFAULT
    scope_id: int | None = None


@dataclass(frozen=True)
class Chain:
    """The scopes a lookup climbs, narrowest first (absent ones are None)."""

    tenant_id: int
    group_id: int | None = None
    project_id: int | None = None
    session_id: int | None = None

    def pairs(self) -> list[tuple[str, int]]:
        ids = {
            Scope.SESSION: self.session_id,
            Scope.PROJECT: self.project_id,
            Scope.GROUP: self.group_id,
            Scope.TENANT: self.tenant_id,
        }
        return [(scope, pk) for scope in CASCADE if (pk := ids[scope]) is not None]


class Effective(Mapping[str, Resolved]):
    """Every registered key's resolution, by key name. A key is resolved when first read
    (a turn reads its engine's keys and the llm ones, not every engine's)."""

    def __init__(self, stored: Iterable[Stored], order: list[str]) -> None:
        rank = {scope: index for index, scope in enumerate(order)}
        narrowest: dict[str, Stored] = {}
        for row in stored:
            held = narrowest.get(row.key)
            if held is None or rank[row.scope] < rank[held.scope]:
                narrowest[row.key] = row
        self._narrowest = narrowest
        self._resolved: dict[str, Resolved] = {}
        self._values = _Values(self)

    def __getitem__(self, name: str) -> Resolved:
        found = self._resolved.get(name)
        if found is None:
            key = get_key(name)
            row = self._narrowest.get(name)
            if row is None:
                found = Resolved(key, key.default_value(self._values))
            else:
                found = Resolved(key, row.value, row.scope, row.scope_id)
            self._resolved[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return (key.name for key in all_keys())

    def __len__(self) -> int:
        return len(all_keys())

    def value(self, name: str) -> Any:
        return self[name].value

    def for_engine(self, engine: str) -> dict[str, Any]:
        """What an engine's ctx.settings holds of the cascade: its own namespace's keys
        unprefixed, and the Brain's other non-secret keys by their full names (`llm.model`).
        Secrets never."""
        found = {key.short_name: self.value(key.name) for key in engine_keys(engine)}
        for key in brain_keys():
            if not key.secret:
                found[key.name] = self.value(key.name)
        return found


class _Values(Mapping[str, Any]):
    """The values of an Effective, as a default function reads them."""

    def __init__(self, effective: Effective) -> None:
        self._effective = effective

    def __getitem__(self, name: str) -> Any:
        return self._effective.value(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._effective)

    def __len__(self) -> int:
        return len(self._effective)


def _load(rows: Iterable[Setting]) -> list[Stored]:
    """Rows as values; a secret in clear (one that no configured key decrypts is left out,
    so the wider scope's value applies)."""
    stored = []
    keys = {key.name: key for key in all_keys()}
    for row in rows:
        key = keys.get(row.key)
        if key is None:
            continue  # a key no longer registered (an engine that was removed)
        value = row.value
        if key.secret:
            value = secrets.decrypt(str(value), row.key)
            if value is None:
                continue
        stored.append(Stored(row.key, row.scope, row.scope_id, value))
    return stored


def _matching(pairs: Iterable[tuple[str, Any]]) -> Q:
    found = Q(pk__in=[])
    for scope, pk in pairs:
        found |= Q(scope=scope, scope_id=pk)
    return found


def effective(chain: Chain) -> Effective:
    """Every key at `chain`'s narrowest scope (one statement)."""
    pairs = chain.pairs()
    rows = Setting.objects.filter(_matching(pairs), tenant_id=chain.tenant_id)
    return Effective(_load(rows), [scope for scope, _ in pairs])


def session_rows(session_id: int) -> list[Stored]:
    """The stored values a session's processes see (one statement: the session's project,
    group and tenant are subqueries)."""
    session = apps.get_model("brain_sessions", "Session").objects.filter(pk=session_id)
    pairs = [
        (Scope.SESSION, session_id),
        (Scope.PROJECT, Subquery(session.values("project_id")[:1])),
        (Scope.GROUP, Subquery(session.values("project__group_id")[:1])),
        (Scope.TENANT, Subquery(session.values("project__tenant_id")[:1])),
    ]
    return _load(Setting.objects.filter(_matching(pairs)))


SESSION_ORDER = [str(scope) for scope in CASCADE]

_cached: OrderedDict[int, tuple[int, list[Stored]]] = OrderedDict()
_cache_lock = threading.Lock()


def session_values(session_id: int, revision: int | None) -> Effective:
    """Every key for a process of `session_id`, as of settings `revision` (what the lane's
    lease read). Revision 0 (no setting was ever written) needs no statement; otherwise the
    stored values are read once per revision in this worker OS process."""
    if not revision:
        return Effective((), SESSION_ORDER)
    with _cache_lock:
        cached = _cached.get(session_id)
        if cached is not None and cached[0] == revision:
            _cached.move_to_end(session_id)
            return Effective(cached[1], SESSION_ORDER)
    rows = session_rows(session_id)
    with _cache_lock:
        _cached[session_id] = (revision, rows)
        _cached.move_to_end(session_id)
        while len(_cached) > CACHED_SESSIONS:
            _cached.popitem(last=False)
    return Effective(rows, SESSION_ORDER)


def forget_cached() -> None:
    """Drop every cached session's values (tests acting as a fresh worker)."""
    with _cache_lock:
        _cached.clear()


def revision_sql() -> str:
    """The settings revision as a scalar subquery (NULL before the first write), for a
    statement that reads it along with its own work (the lane's lease)."""
    return revisions.revision_sql(SettingsRevision)


def current_revision() -> int:
    """The settings revision now (a statement; the lane gets it with its lease instead)."""
    return revisions.current_revision(SettingsRevision)
