"""The database vector stores, where this machine has them: sqlite-vec (a Python whose sqlite3
may load extensions) and pgvector (a PostgreSQL server that offers the extension). Each runs
the same checks as the in-memory scan: nearest first, another tenant's vectors never, a
removed passage never again."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from django.db import connection

from tests.support.memory import embedded
from tests.support.tenancy import Tenancy
from vancetope.memory import vectors
from vancetope.memory.items import Source, invalidate_item, write_item
from vancetope.memory.models import MemoryItem, Scope, SourceKind
from vancetope.memory.scopes import Target, project_reach
from vancetope.memory.search import Mode, search

pytestmark = pytest.mark.django_db(transaction=True)


def sqlite_vec_store() -> vectors.VectorStore | None:
    if connection.vendor != "sqlite":
        return None
    connection.ensure_connection()
    if not hasattr(connection.connection, "enable_load_extension"):
        return None
    return vectors.SqliteVecStore()


def pgvector_store() -> vectors.VectorStore | None:
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            return None
    return vectors.PgVectorStore()


def remember(tenancy: Tenancy, content: str) -> MemoryItem:
    target = Target(Scope.PROJECT, tenancy.tenant, project=tenancy.project)
    return write_item(target, content, Source(SourceKind.USER))


@pytest.mark.parametrize("make", [sqlite_vec_store, pgvector_store], ids=["sqlite-vec", "pgvector"])
def test_a_database_vector_store_answers_nearest_first_within_the_tenant(
    make: Callable[[], vectors.VectorStore | None], alice: Tenancy, bob: Tenancy
) -> None:
    # given
    store = make()
    if store is None:
        pytest.skip("this database offers no such store here")
    vectors._store[:] = [store]
    kept = remember(alice, "The staging database is backed up every night.")
    gone = remember(alice, "Our office dog is called Biscuit.")
    remember(bob, "Bob's database is backed up weekly.")
    embedded()
    # when
    first = search(project_reach(alice.project), "nightly backups", 5, mode=Mode.DENSE)
    invalidate_item(gone, "wrong")
    second = search(project_reach(alice.project), "puppy", 5, mode=Mode.DENSE)
    # then
    assert [hit["itemId"] for hit in first] == [kept.public_id, gone.public_id]
    assert [hit["itemId"] for hit in second] == [kept.public_id]
    assert store.nearest([alice.tenant.pk], np.zeros(256, dtype=np.float32) + 1, 5)
