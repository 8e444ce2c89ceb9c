"""Fixtures of the memory tests: alice's session, and waiting for embeddings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sessions_app.models import Session
from tests.support.tenancy import Tenancy, open_session
from vancetope.memory.embeddings import reset_embedder
from vancetope.memory.indexing import wait_for_embeddings
from vancetope.memory.vectors import reset_store


@pytest.fixture(autouse=True)
def _fresh_memory_parts(settings: Any) -> Iterator[None]:
    """Each test chooses its embedder and store anew (a test may change the settings), and
    no embedding of one test runs into the next."""
    reset_embedder()
    reset_store()
    yield
    wait_for_embeddings()
    reset_embedder()
    reset_store()


@pytest.fixture
def session(alice: Tenancy) -> Session:
    return open_session(alice)
