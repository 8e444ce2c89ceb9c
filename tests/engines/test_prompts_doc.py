"""docs/engines.md shows each engine's prompts as the code has them: every default system
prompt and every structured step's tool description, word for word."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.builtin.frankie import REPORT_DESCRIPTION
from engines.builtin.marvin.prompts import PLAN_TASKS
from engines.builtin.zaphod import synthesis_schema
from engines.registry import all_engines

DOC = (Path(__file__).resolve().parents[2] / "docs" / "engines.md").read_text()


@pytest.mark.parametrize(
    "engine",
    [e for e in all_engines() if e.default_settings.get("systemPrompt")],
    ids=lambda e: e.name,
)
def test_every_engines_system_prompt_is_in_the_doc(engine):
    assert f"| {engine.name} | {engine.default_settings['systemPrompt']} |" in DOC


@pytest.mark.parametrize(
    "description",
    [PLAN_TASKS.description, synthesis_schema(["x"]).description, REPORT_DESCRIPTION],
)
def test_every_structured_steps_tool_description_is_in_the_doc(description):
    assert description in DOC
