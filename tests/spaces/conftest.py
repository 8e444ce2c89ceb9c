"""Fixtures of the thinking-space tests: alice's arthur session, and a space grown from it
through the services the thinking_* tools call."""

from __future__ import annotations

import pytest

from sessions_app.models import Session
from tests.support.arthur import arthur_session
from tests.support.tenancy import Tenancy


@pytest.fixture
def root_session(alice: Tenancy) -> Session:
    return arthur_session(alice)
