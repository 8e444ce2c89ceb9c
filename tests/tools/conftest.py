"""Fixtures for the tool kernel: a scripted LLM that can read tool results, server tools that
exist only during a test, and recipes in alice's project."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from vancetope.tools.mcp_client import close_mcp_connections
from vancetope.tools.registry import server_tool, unregister_server_tool


@pytest.fixture
def temporary_server_tools() -> Iterator[Callable[..., Any]]:
    names: list[str] = []

    def register(name: str, run: Callable[..., Any], **kwargs: Any) -> None:
        parameters = kwargs.pop("parameters", {"type": "object"})
        server_tool(name, f"test tool {name}", parameters, **kwargs)(run)
        names.append(name)

    yield register
    for name in names:
        unregister_server_tool(name)


@pytest.fixture
def mcp_connections() -> Iterator[None]:
    yield
    close_mcp_connections()
