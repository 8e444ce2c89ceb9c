"""Fixtures for the tool kernel: a scripted LLM that can read tool results, server tools that
exist only during a test, and recipes in alice's project."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from recipes_app.models import Recipe, RecipeScope
from tests.conftest import Tenancy
from vancetope.llm.base import CallInfo, LlmMessage, StreamItem, TextDelta, ToolSchema, Usage
from vancetope.llm.scripted import ScriptedProvider
from vancetope.tools.mcp_client import close_mcp_connections
from vancetope.tools.registry import server_tool, unregister_server_tool


class ToolReadingProvider(ScriptedProvider):
    """The scripted provider, plus: it records the tools each call offered, and when the last
    message is a tool result it answers `result: <that result>` (so a test can see that the
    answer reached the LLM)."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.offered: list[list[str]] = []

    def stream(
        self,
        messages: list[LlmMessage],
        tools: list[ToolSchema] | None = None,
        info: CallInfo | None = None,
    ) -> Any:
        self.offered.append([tool.name for tool in tools or []])
        self.descriptions = {tool.name: tool.description for tool in tools or []}
        if messages and messages[-1].role == "tool":
            return iter(self._answer_tool(messages[-1].content))
        return super().stream(messages, tools)

    @staticmethod
    def _answer_tool(content: str) -> list[StreamItem]:
        return [TextDelta(f"result: {content}"), Usage(1, len(content.split()) + 1)]


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[Any]], ToolReadingProvider]:
    """Install a ToolReadingProvider with the given script for every lane."""

    def install(script: list[Any]) -> ToolReadingProvider:
        provider = ToolReadingProvider(script)
        monkeypatch.setattr("processes.lane.context.get_provider", lambda config=None: provider)
        return provider

    return install


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


def project_recipe(tenancy: Tenancy, name: str, engine: str = "frankie", **fields: Any) -> Recipe:
    return Recipe.objects.create(
        name=name,
        engine=engine,
        scope=RecipeScope.PROJECT,
        project=tenancy.project,
        tenant=tenancy.tenant,
        **fields,
    )
