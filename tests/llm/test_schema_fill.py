"""The smallest arguments that fit a tool's schema (vancetope/llm/schema_fill.py), which the
scripted provider's echo sends for a forced tool it has no rule for."""

from __future__ import annotations

import jsonschema
import pytest

from vancetope.llm.base import CallInfo, LlmMessage, ToolCall, ToolSchema
from vancetope.llm.schema_fill import minimal_arguments
from vancetope.llm.scripted import ScriptedProvider

PLAN = {
    "type": "object",
    "properties": {
        "tasks": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/task"},
        },
        "note": {"type": "string"},
    },
    "required": ["tasks"],
    "$defs": {
        "task": {
            "type": "object",
            "properties": {
                "kind": {"enum": ["WORKER", "AGGREGATE"]},
                "title": {"type": "string", "minLength": 3, "maxLength": 10},
                "weight": {"type": "integer", "exclusiveMinimum": 0},
                "share": {"type": ["null", "number"], "minimum": 0.5},
                "done": {"type": "boolean"},
                "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
            "required": ["kind", "title", "weight", "share", "done", "id"],
        }
    },
}


def test_only_what_the_schema_requires_is_filled_with_the_text_and_it_validates() -> None:
    arguments = minimal_arguments(PLAN, "echo: study Saturn")
    assert arguments == {
        "tasks": [
            {
                "kind": "WORKER",
                "title": "echo: stud",
                "weight": 1,
                "share": 0.5,
                "done": False,
                "id": "echo: study Saturn",
            }
        ]
    }
    jsonschema.validate(arguments, PLAN)


def test_a_short_text_is_padded_to_the_minimum_length() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": 5}}}
    schema["required"] = ["s"]
    assert minimal_arguments(schema, "ab") == {"s": "ab..."}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^[0-9]+$"}}},
        {"type": "object", "properties": {"s": {"$ref": "https://example.org/x.json"}}},
        {
            "type": "object",
            "properties": {"s": {"$ref": "#/$defs/s"}},
            "$defs": {"s": {"$ref": "#/$defs/s"}},
        },
        {
            "type": "object",
            "properties": {
                "s": {"type": "string", "format": "email", "minLength": 99, "maxLength": 9}
            },
        },
    ],
)
def test_a_schema_it_cannot_fill_gives_none(schema) -> None:
    schema["required"] = ["s"]
    assert minimal_arguments(schema, "text") is None


def test_the_echo_calls_a_forced_tool_it_has_no_rule_for_and_a_rule_still_wins() -> None:
    report = ToolSchema(
        "report_result",
        "report",
        {
            "type": "object",
            "properties": {"summary": {"type": "string"}, "confidence": {"type": "number"}},
            "required": ["summary"],
        },
    )
    messages = [LlmMessage(role="user", content="count the moons")]
    bare = list(
        ScriptedProvider().stream(messages, [report], CallInfo(), force_tool="report_result")
    )
    calls = [item for item in bare if isinstance(item, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("report_result", {"summary": "echo: count the moons"})
    ]
    # not forced: the echo answers in text, and calls nothing
    free = list(ScriptedProvider().stream(messages, [report], CallInfo()))
    assert not [item for item in free if isinstance(item, ToolCall)]
    # a rule says what the model does, even with a forced tool: here, no call
    scripted = ScriptedProvider([{"reply": "no call"}])
    ruled = list(scripted.stream(messages, [report], CallInfo(), force_tool="report_result"))
    assert not [item for item in ruled if isinstance(item, ToolCall)]
