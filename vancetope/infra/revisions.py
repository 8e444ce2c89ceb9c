"""Revision rows: one row (id 1) of a model with a `revision` counter that every write of what
it guards raises, in the writer's transaction.

A worker caches what rarely changes (the settings cascade, the tools that are down) keyed by
the revision, and reads the revision with a statement it runs anyway (the lane's lease, as a
scalar subquery): a turn whose revisions are the cached ones runs no statement for them, and a
write on any process of any host is seen by the next lease of every lane. Nothing is served
stale by the clock.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Model

from vancetope.infra import fastsql


def raise_revision(model: type[Model]) -> None:
    """revision + 1 on the model's one row (made by the first write): one statement, whose
    row lock orders concurrent writers, so a reader that sees revision N sees every write up
    to N."""
    statement = fastsql.sql(
        model,
        "INSERT INTO {table} ({id}, {revision}) VALUES (1, 1) "
        "ON CONFLICT ({id}) DO UPDATE SET {revision} = {table}.{revision} + 1",
    )
    with connection.cursor() as cursor:
        cursor.execute(statement)


def revision_sql(model: type[Model]) -> str:
    """The revision as a scalar subquery (NULL before the first write), for a statement that
    reads it along with its own work."""
    return fastsql.sql(model, "(SELECT {revision} FROM {table} WHERE {id} = 1)")


def current_revision(model: type[Model]) -> int:
    """The revision now (a statement; the lane gets it with its lease instead)."""
    found = model._default_manager.filter(pk=1).values_list("revision", flat=True).first()
    return int(found or 0)
