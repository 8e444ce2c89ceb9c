"""Rows of the turn path without the ORM's per-call work (vancetope/infra/fastsql.py uses
these, and exports them): values adapted as their fields adapt them, with what is pure kept
(`adapt`), new instances built by position (`build`), and the fields an insert writes
(`insert_fields`)."""

from __future__ import annotations

import threading
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


def adapt(field: Any, value: Any, db: Any) -> Any:
    """`value` as `field.get_db_prep_save` adapts it for `db` (None is NULL to every field,
    the ORM's adapters pass it through); a bool's, str's or int's adaptation is kept per field
    (an equal str and str-enum value adapt alike)."""
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
