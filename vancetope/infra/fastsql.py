"""Hot-path SQL: the statements of a chat turn, built once per shape and reused.

A turn runs the same few statements every time. The ORM compiles each query anew on every call,
and for wide models that costs far more than running it (0.3–1.5 ms per query on a small
machine, against tens of µs for the statement itself). The turn path (steer, lane, commit,
events) therefore uses these helpers; everything else uses the ORM.

Nothing here bypasses the model fields: values are adapted by `field.get_db_prep_save` and
columns converted by the field's converters, exactly as the ORM does, and rows become model
instances through `Model.from_db`. So SQLite and PostgreSQL receive what the ORM would send,
and the instances behave like ORM-loaded ones.

Columns are named by their model's fields, never spelled out by callers: in a `where`, a `tail`
or a `scalar` statement, `{name}` is the quoted column of the model's field `name` (its name or
attname) and `{table}` the model's quoted table. A field that does not exist (renamed, removed)
raises FieldDoesNotExist the first time the statement is built; built statements are cached, so
naming costs nothing after that.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import FieldDoesNotExist
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model

from vancetope.infra.fastrows import adapt, build, insert_fields

M = TypeVar("M", bound=Model)
# The row helpers of fastrows, used through this module like the rest.
__all__ = [
    "Add",
    "adapt",
    "build",
    "col",
    "insert",
    "insert_values",
    "scalar",
    "select",
    "sql",
    "table",
    "update",
    "update_returning",
    "values",
]
Converter = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class Add:
    """`column = column + amount` in an update."""

    amount: int


@dataclass(frozen=True)
class _Select:
    sql: str
    columns: str
    attnames: tuple[str, ...]
    converters: tuple[tuple[int, tuple[tuple[Converter, Any], ...]], ...]


_selects: dict[tuple[Any, ...], _Select] = {}
_statements: dict[tuple[Any, ...], str] = {}
_updates: dict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = {}
_columns: dict[tuple[type[Model], str], str] = {}
_lock = threading.Lock()
# `{name}` in a statement template: a field of the statement's model, or `{table}`.
_NAME = re.compile(r"\{(\w+)\}")


def _db() -> Any:
    """This thread's connection, looked up once per call: every `connection.…` goes through
    Django's per-thread lookup, and a turn made over a hundred of them."""
    return connections[DEFAULT_DB_ALIAS]


def _execute(db: Any, statement: str, params: Sequence[Any], fetch: str = "") -> Any:
    """Run one statement; by `fetch`, its rows ("all"), first row ("one"), count of changed
    rows ("count") or the cursor (""). It runs on the DB-API cursor kept per connection, not
    through a new Django cursor wrapper (7 µs each) and its execute path (1–2 µs), keeping what
    that path guarantees: a transaction marked for rollback refuses it, the connection is
    health-checked and opened as `cursor()` does, and the driver's errors (from the statement
    or its rows) become Django's. While queries are logged (DEBUG, a test capturing them) or an
    execute wrapper is installed, it goes through a new Django cursor, as usual."""
    if db.queries_logged or db.execute_wrappers:
        return _result(db.cursor(), statement, params, fetch)
    if db.needs_rollback:
        db.validate_no_broken_transaction()
    db.close_if_health_check_failed()
    if db.connection is None:
        db.ensure_connection()
    kept = db.__dict__.get("_fastsql_cursor")
    if kept is None or kept[0] is not db.connection:
        kept = db.__dict__["_fastsql_cursor"] = (db.connection, db.create_cursor())
    with db.wrap_database_errors:
        return _result(kept[1], statement, params, fetch)


def _result(cursor: Any, statement: str, params: Sequence[Any], fetch: str) -> Any:
    cursor.execute(statement, params)
    if fetch == "count":
        return cursor.rowcount
    return cursor.fetchall() if fetch == "all" else cursor.fetchone() if fetch else cursor


def _quote(name: str | None) -> str:
    assert name is not None
    return str(_db().ops.quote_name(name))


def col(model: type[Model], name: str) -> str:
    """The quoted column of `model`'s concrete field `name` (a field name or attname, so a
    foreign key is `session` or `session_id`). Raises FieldDoesNotExist for a name that is not
    such a field. Cached per (model, name)."""
    key = (model, name)
    found = _columns.get(key)
    if found is None:
        field: Any = model._meta.get_field(name)
        if not getattr(field, "concrete", False) or field.many_to_many:
            raise FieldDoesNotExist(f"{model.__name__}.{name} is not a column")
        found = _quote(field.column)
        with _lock:
            _columns[key] = found
    return found


def table(model: type[Model]) -> str:
    """The quoted table of `model`."""
    return _quote(model._meta.db_table)


def _render(model: type[Model], template: str) -> str:
    """`template` with each `{name}` replaced by `model`'s column (`{table}`: its table)."""
    return _NAME.sub(
        lambda match: table(model) if match[1] == "table" else col(model, match[1]), template
    )


def sql(model: type[Model], template: str) -> str:
    """`template` with `model`'s columns and table named (see the module docstring), cached
    per (model, template): for a part of a statement about another model, as a subquery."""
    key = ("sql", model, template)
    found = _statements.get(key)
    if found is None:
        found = _render(model, template)
        with _lock:
            _statements[key] = found
    return found


def _build_select(
    db: Any, model: type[Model], names: Sequence[str] | None, where: str, tail: str, models: bool
) -> _Select:
    meta = model._meta
    fields: list[Any] = list(meta.concrete_fields)
    if names is not None:
        if models:  # in the model's order, as Model.from_db reads a row with deferred fields
            order = {key: n for n, f in enumerate(fields) for key in (f.name, f.attname)}
            names = sorted(names, key=order.__getitem__)
        fields = [meta.get_field(name) for name in names]
    columns = ", ".join(_quote(field.column) for field in fields)
    converters = []
    for index, field in enumerate(fields):
        expression = field.get_col(meta.db_table)
        found = db.ops.get_db_converters(expression) + expression.get_db_converters(db)
        if found:
            converters.append((index, tuple((converter, expression) for converter in found)))
    statement = (
        f"SELECT {columns} FROM {table(model)} WHERE {_render(model, where)} {_render(model, tail)}"
    ).rstrip()
    attnames = tuple(field.attname for field in fields)
    return _Select(statement, columns, attnames, tuple(converters))


def _select(
    db: Any, model: type[Model], names: Sequence[str] | None, where: str, tail: str, models: bool
) -> _Select:
    """The statement and its columns; `models`: they make model instances (`names` then come
    in the model's field order, whatever order they are given in)."""
    key = (db.vendor, model, None if names is None else tuple(names), where, tail, models)
    found = _selects.get(key)
    if found is None:
        found = _build_select(db, model, names, where, tail, models)
        with _lock:
            _selects[key] = found
    return found


def _fetch(db: Any, statement: str, params: Sequence[Any]) -> list[list[Any]]:
    return [list(row) for row in _execute(db, statement, params, "all")]


def _convert(db: Any, select: _Select, rows: list[list[Any]]) -> list[list[Any]]:
    for row in rows:
        for index, converters in select.converters:
            value = row[index]
            for converter, col in converters:
                value = converter(value, col, db)
            row[index] = value
    return rows


def _rows(db: Any, select: _Select, params: Sequence[Any]) -> list[list[Any]]:
    return _convert(db, select, _fetch(db, select.sql, params))


def select(
    model: type[M],
    where: str,
    params: Sequence[Any],
    *,
    tail: str = "",
    also: Sequence[tuple[str, str]] = (),
    names: Sequence[str] | None = None,
) -> list[M]:
    """Rows of `model` (every column) WHERE `where` (`{field}` names, %s placeholders), then
    `tail` (ORDER BY / LIMIT, `{field}` names too). `also` and `names`: as in
    `update_returning` (the placeholders of `also` come before those of `where`)."""
    db = _db()
    prepared = _also(_select(db, model, names, where, tail, True), also)
    return _instances(db, model, prepared, _rows(db, prepared, params), also)


def _also(select: _Select, also: Sequence[tuple[str, str]]) -> _Select:
    """`select` returning the `also` expressions after its columns."""
    if not also:
        return select
    columns = f"{select.columns}, {', '.join(expression for _, expression in also)}"
    statement = select.sql.replace(f"SELECT {select.columns} ", f"SELECT {columns} ", 1)
    return _Select(statement, columns, select.attnames, select.converters)


def _instances(
    db: Any, model: type[M], select: _Select, rows: list[list[Any]], also: Sequence[Any]
) -> list[M]:
    width = len(select.attnames)
    found = [model.from_db(db.alias, select.attnames, row[:width]) for row in rows]
    for instance, row in zip(found, rows, strict=True):
        for (name, _), value in zip(also, row[width:], strict=True):
            setattr(instance, name, value)
    return found


def values(
    model: type[Model], names: Sequence[str], where: str, params: Sequence[Any], *, tail: str = ""
) -> list[list[Any]]:
    """The named fields of the matching rows, converted as the ORM converts them."""
    db = _db()
    return _rows(db, _select(db, model, names, where, tail, False), params)


def insert(objs: Sequence[Model], *, returning_pk: bool = False) -> None:
    """INSERT the instances in one statement (every concrete field but an auto primary key).
    With `returning_pk` their new primary keys are set on them."""
    if not objs:
        return
    db = _db()
    model = type(objs[0])
    meta = model._meta
    fields = insert_fields(model)
    key = ("insert", db.vendor, model, len(objs), returning_pk)
    statement = _statements.get(key)
    if statement is None:
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        statement = (
            f"INSERT INTO {_quote(meta.db_table)} "
            f"({', '.join(_quote(field.column) for field, _, _ in fields)}) "
            f"VALUES {', '.join([row] * len(objs))}"
        )
        if returning_pk:
            assert meta.pk is not None
            statement += f" RETURNING {_quote(meta.pk.column)}"
        with _lock:
            _statements[key] = statement
    params: list[Any] = []
    for obj in objs:
        for field, attname, plain in fields:
            value = getattr(obj, attname) if plain else field.pre_save(obj, True)
            params.append(adapt(field, value, db))
    rows = _execute(db, statement, params, "all" if returning_pk else "")
    if returning_pk:
        # Rows come back in the order of VALUES, on SQLite and PostgreSQL alike (Django's
        # bulk_create relies on the same).
        for obj, row in zip(objs, rows, strict=True):
            obj.pk = row[0]
    for obj in objs:
        obj._state.adding = False
        obj._state.db = db.alias


@dataclass(frozen=True)
class _Omitted:
    """A field an `insert_values` row leaves out: its default, adapted once when it is a
    constant (`value`), or by `field` for each row (a callable default: a new list, now())."""

    field: Any
    value: Any


@dataclass(frozen=True)
class _InsertValues:
    sql: str
    named: tuple[Any, ...]
    omitted: tuple[_Omitted, ...]


_insert_values: dict[tuple[Any, ...], _InsertValues] = {}


def _build_insert_values(
    db: Any, model: type[Model], names: tuple[str, ...], count: int, returning: str
) -> _InsertValues:
    meta = model._meta
    named: tuple[Any, ...] = tuple(meta.get_field(name) for name in names)
    for field in named:
        if not getattr(field, "concrete", False) or field.many_to_many:
            raise FieldDoesNotExist(f"{model.__name__}.{field.name} is not a column")
    left_out = [f for f in meta.concrete_fields if f is not meta.auto_field and f not in named]
    omitted = []
    for field in left_out:
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            raise ValueError(f"{model.__name__}.{field.name} is set on save: name it")
        if callable(field.default) and field.default not in {list, dict}:
            # A new value each time (now()); an empty list or dict adapts to the same JSON.
            omitted.append(_Omitted(field, None))
        else:
            omitted.append(_Omitted(None, field.get_db_prep_save(field.get_default(), db)))
    columns = ", ".join(_quote(field.column) for field in (*named, *left_out))
    row = "(" + ", ".join(["%s"] * (len(named) + len(left_out))) + ")"
    statement = f"INSERT INTO {table(model)} ({columns}) VALUES {', '.join([row] * count)}"
    if returning:
        statement += f" RETURNING {_render(model, returning)}"
    return _InsertValues(statement, named, tuple(omitted))


def insert_values(
    model: type[Model], rows: Sequence[dict[str, Any]], *, returning: str = ""
) -> list[list[Any]]:
    """INSERT rows given as field name (or attname) → value, every row naming the same fields,
    in one statement and without model instances: a field the rows leave out gets its model
    default, as `Model()` gives it (a constant default is adapted once, when the statement is
    built). For a wide model written on the turn path (a person's run log), where building the
    instance and adapting each default cost more than running the statement.

    `returning`: what the statement returns of each row, as SQL (`{field}` names the model's
    columns; a scalar subquery about another table, named with `sql()`, rides along), fetched
    as it comes from the driver; without it nothing is returned."""
    if not rows:
        return []
    db = _db()
    names = tuple(rows[0])
    key = (db.vendor, model, names, len(rows), returning)
    found = _insert_values.get(key)
    if found is None:
        found = _build_insert_values(db, model, names, len(rows), returning)
        with _lock:
            _insert_values[key] = found
    params: list[Any] = []
    for row in rows:
        params += [
            adapt(field, row[name], db) for name, field in zip(names, found.named, strict=True)
        ]
        params += [
            item.value if item.field is None else adapt(item.field, item.field.get_default(), db)
            for item in found.omitted
        ]
    rows = _execute(db, found.sql, params, "all" if returning else "")
    return [list(row) for row in rows] if returning else []


def update(model: type[Model], where: str, params: Sequence[Any], changes: dict[str, Any]) -> int:
    """UPDATE the rows WHERE `where` (`{field}` names, %s placeholders) with `changes` (field
    name → value, or Add(n)); returns the number of rows changed."""
    db = _db()
    statement, values = _update(db, model, where, params, changes, returning=None)
    return int(_execute(db, statement, values, "count"))


def update_returning(
    model: type[M],
    where: str,
    params: Sequence[Any],
    changes: dict[str, Any],
    *,
    also: Sequence[tuple[str, str]] = (),
    names: Sequence[str] | None = None,
) -> list[M]:
    """As `update`, and the changed rows as they are after it (one statement). `also` adds
    (attribute, SQL expression) pairs to what the statement returns, each set on the returned
    instances as that attribute: a scalar subquery about another table rides along for free
    (`sql()` names its columns). `names`: only these fields are returned (the others are
    deferred: reading one costs a query), so a wide row's JSON is not decoded for nothing."""
    db = _db()
    returning = _also(_select(db, model, names, "", "", True), also)
    statement, values = _update(db, model, where, params, changes, returning=returning)
    return _instances(
        db, model, returning, _convert(db, returning, _fetch(db, statement, values)), also
    )


def _update(
    db: Any,
    model: type[Model],
    where: str,
    params: Sequence[Any],
    changes: dict[str, Any],
    returning: _Select | None,
) -> tuple[str, list[Any]]:
    names = tuple(changes)
    shape = tuple(isinstance(changes[name], Add) for name in names)
    key = ("update", db.vendor, model, names, shape, where, returning and returning.columns)
    found = _updates.get(key)
    if found is None:
        parts = []
        for name, adds in zip(names, shape, strict=True):
            column = col(model, name)
            parts.append(f"{column} = {column} + %s" if adds else f"{column} = %s")
        statement = f"UPDATE {table(model)} SET {', '.join(parts)} WHERE {_render(model, where)}"
        if returning is not None:
            statement += f" RETURNING {returning.columns}"
        # The field of each set value (None for an Add), to adapt the value as the ORM does.
        fields: tuple[Any, ...] = tuple(
            None if adds else model._meta.get_field(name)
            for name, adds in zip(names, shape, strict=True)
        )
        found = (statement, fields)
        with _lock:
            _updates[key] = found
    statement, fields = found
    values = []
    for name, field in zip(names, fields, strict=True):
        value = changes[name]
        values.append(value.amount if field is None else adapt(field, value, db))
    return statement, [*values, *params]


def scalar(model: type[Model], template: str, params: Sequence[Any]) -> Any:
    """The first column of the first row (None without a row) of a plain statement about
    `model` (a SELECT, or a write with RETURNING), its columns and table named as `{field}`
    and `{table}`."""
    row = _execute(_db(), sql(model, template), params, "one")
    return None if row is None else row[0]
