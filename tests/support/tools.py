"""Tool test helpers: a project recipe, and the scripted provider that records the tools it
was offered."""

from __future__ import annotations

from typing import Any

from recipes_app.models import Recipe, RecipeScope
from tests.support.tenancy import Tenancy
from vancetope.llm.base import CallInfo, LlmMessage, StreamItem, TextDelta, ToolSchema, Usage
from vancetope.llm.scripted import ScriptedProvider


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
        *,
        force_tool: str | None = None,
    ) -> Any:
        self.offered.append([tool.name for tool in tools or []])
        self.descriptions = {tool.name: tool.description for tool in tools or []}
        if messages and messages[-1].role == "tool":
            return iter(self._answer_tool(messages[-1].content))
        return super().stream(messages, tools)

    @staticmethod
    def _answer_tool(content: str) -> list[StreamItem]:
        return [TextDelta(f"result: {content}"), Usage(1, len(content.split()) + 1)]


def project_recipe(tenancy: Tenancy, name: str, engine: str = "frankie", **fields: Any) -> Recipe:
    return Recipe.objects.create(
        name=name,
        engine=engine,
        scope=RecipeScope.PROJECT,
        project=tenancy.project,
        tenant=tenancy.tenant,
        **fields,
    )
