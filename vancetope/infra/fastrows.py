"""Rows of the turn path without the ORM's per-call work (vancetope/infra/fastsql.py uses
these, and exports them): values adapted as their fields adapt them, with what is pure kept
(`adapt`), new instances built by position (`build`), and the fields an insert writes
(`insert_fields`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.core.exceptions import FieldDoesNotExist
from django.db.models import DateField, DateTimeField, Field, Model

M = TypeVar("M", bound=Model)
_lock = threading.Lock()

# Adapted str and int values, per database vendor and field (by id: a model's fields live as
# long as the process): the fields' adapters are pure for these, and a turn writes the same ids,
# names and small counts over and over. Bounded per field.
_adapted: dict[tuple[str, int], dict[Any, Any]] = {}
_ADAPTED_PER_FIELD = 512
_MISSING = object()
# A bool field's two adapted values, kept apart from the memo (True == 1 would mix them).
_adapted_bools: dict[tuple[str, int], tuple[Any, Any]] = {}
# str and int; str subclasses join once seen.
_KEPT_TYPES: set[type] = {str, int}
# How a field adapts a UTC datetime for a database vendor, once found (see _utc_adapter), or
# None where no shortcut gives what the field gives.
_utc_adapters: dict[tuple[str, int], Callable[[datetime], Any] | None] = {}
# The datetimes a shortcut is tried on: with and without microseconds (text leaves out
# ".000000"), before and after 2000, and a day apart (in case a field shifts dates).
_PROBES = (
    datetime(2026, 12, 4, 19, 7, 1, 234567, tzinfo=UTC),
    datetime(2026, 12, 5, 19, 7, 1, 234567, tzinfo=UTC),
    datetime(1999, 1, 2, 3, 4, 5, tzinfo=UTC),
)


def _as_given(value: datetime) -> datetime:
    return value


def _naive_text(value: datetime) -> str:
    return str(value.replace(tzinfo=None))


def _utc_adapter(field: Any, db: Any) -> Callable[[datetime], Any] | None:
    """What `field.get_db_prep_save(value, db)` does to an aware UTC datetime, as a shortcut:
    the value as given (PostgreSQL: the driver adapts it) or its naive text (SQLite with
    USE_TZ and a UTC connection), whichever gives what the field gives for every probe;
    None when neither does (a date field, a connection in another time zone, USE_TZ off: then
    the field adapts every value). The field's own adaptation is a dozen calls through its
    prep, the time zone checks and the backend's adapter for each of a turn's twenty
    datetimes."""
    try:
        wanted = [field.get_db_prep_save(probe, db) for probe in _PROBES]
    except (TypeError, ValueError):
        return None
    for shortcut in (_as_given, _naive_text):
        if all(shortcut(probe) == found for probe, found in zip(_PROBES, wanted, strict=True)):
            return shortcut
    return None


def adapt(field: Any, value: Any, db: Any) -> Any:
    """`value` as `field.get_db_prep_save` adapts it for `db` (None is NULL to every field,
    the ORM's adapters pass it through); a bool's, str's or int's adaptation is kept per field
    (an equal str and str-enum value adapt alike), and an aware UTC datetime goes the field's
    shortcut (`_utc_adapter`) where it has one."""
    if value is None:
        return None
    kind = type(value)
    if kind is bool:
        pair = _adapted_bools.get((db.vendor, id(field)))
        if pair is None:
            pair = _adapted_bools[db.vendor, id(field)] = (
                field.get_db_prep_save(False, db),
                field.get_db_prep_save(True, db),
            )
        return pair[value]
    if kind is datetime and value.tzinfo is UTC:  # timezone.now(), a stored datetime
        key = (db.vendor, id(field))
        try:
            shortcut = _utc_adapters[key]
        except KeyError:
            shortcut = _utc_adapters[key] = _utc_adapter(field, db)
        if shortcut is not None:
            return shortcut(value)
        return field.get_db_prep_save(value, db)
    if kind not in _KEPT_TYPES:
        if not issubclass(kind, str):  # a str subclass: a TextChoices member, as its value
            return field.get_db_prep_save(value, db)
        _KEPT_TYPES.add(kind)
    memo = _adapted.get((db.vendor, id(field)))
    if memo is None:
        memo = _adapted.setdefault((db.vendor, id(field)), {})
    found = memo.get(value, _MISSING)
    if found is _MISSING:
        found = field.get_db_prep_save(value, db)
        if len(memo) >= _ADAPTED_PER_FIELD:
            memo.clear()
        memo[value] = found
    return found


_builds: dict[type[Model], tuple[tuple[str, Any, Any], ...]] = {}


def _build_spec(model: type[Model]) -> tuple[tuple[str, Any, Any], ...]:
    """Per concrete field, in order: its attname, its constant default, and the field's
    get_default when the default is a callable (a new dict, now())."""
    meta = model._meta
    spec: list[tuple[str, Any, Any]] = []
    for field in meta.concrete_fields:
        if field is meta.auto_field:
            spec.append((field.attname, None, None))
        elif callable(field.default):
            spec.append((field.attname, None, field.get_default))
        else:
            spec.append((field.attname, field.get_default(), None))
    return tuple(spec)


def build(model: type[M], values: dict[str, Any]) -> M:
    """A new, unsaved instance of `model` from attname → value (a foreign key as `x_id`), the
    fields left out at their model defaults: what `model(**values)` gives, built as
    Model.from_db builds a loaded row (by position, about three times cheaper), for the rows
    the turn path inserts. A name that is not a field's attname raises FieldDoesNotExist."""
    spec = _builds.get(model)
    if spec is None:
        spec = _build_spec(model)
        with _lock:
            _builds[model] = spec
    args = []
    given = 0
    for attname, default, make in spec:
        if attname in values:
            args.append(values[attname])
            given += 1
        else:
            args.append(default if make is None else make())
    if given != len(values):
        known = {attname for attname, _, _ in spec}
        unknown = sorted(set(values) - known)
        raise FieldDoesNotExist(f"{model.__name__} has no field attname {unknown}")
    return model(*args)


_insert_fields_of: dict[type[Model], tuple[tuple[Any, str, bool], ...]] = {}


def _plain_pre_save(field: Any) -> bool:
    """Whether the field's pre_save is only reading its attribute (Field.pre_save, or a date
    field's without auto_now/auto_now_add): the insert then reads it itself."""
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return False
    return type(field).pre_save in {Field.pre_save, DateField.pre_save, DateTimeField.pre_save}


def insert_fields(model: type[Model]) -> tuple[tuple[Any, str, bool], ...]:
    """The inserted fields of `model` (all concrete ones but an auto primary key), each with
    its attname and whether its pre_save is plain; cached per model."""
    found = _insert_fields_of.get(model)
    if found is None:
        meta = model._meta
        found = tuple(
            (field, field.attname, _plain_pre_save(field))
            for field in meta.concrete_fields
            if field is not meta.auto_field
        )
        with _lock:
            _insert_fields_of[model] = found
    return found
