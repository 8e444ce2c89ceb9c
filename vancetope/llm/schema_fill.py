"""The smallest arguments that fit a tool's JSON Schema, with a text in its text fields.

The scripted provider answers a forced tool it has no rule for with such a call (the echo of
the last user message in every string), so a structured step (marvin's `plan`, a worker's
`report_result`) works on the bare offline default as the echo works for a chat. Only what a
schema requires is filled: required properties, `minItems` items; an `enum`, a `const` or a
`default` is taken as it is. The result is checked with `jsonschema`: a schema this cannot fill
(a `pattern`, a `format` it does not know) gives None, and the caller answers without a call.
"""

from __future__ import annotations

from typing import Any

import jsonschema

# A schema nested deeper than this (a recursive $ref) is not filled.
MAX_DEPTH = 32


class Unfillable(Exception):
    """The schema asks for something this filler does not make."""


def minimal_arguments(schema: dict[str, Any], text: str) -> dict[str, Any] | None:
    """The smallest object that validates against `schema` (a tool's parameters), its strings
    `text`; None when there is none this filler can make."""
    try:
        value = _fill(schema, schema, text, 0)
    except Unfillable:
        return None
    if not isinstance(value, dict):
        return None
    try:
        jsonschema.validate(value, schema)
    except (jsonschema.ValidationError, jsonschema.SchemaError):
        return None
    return value


def _fill(node: Any, root: dict[str, Any], text: str, depth: int) -> Any:
    if depth > MAX_DEPTH or not isinstance(node, dict):
        raise Unfillable("too deep, or not a schema")
    if "$ref" in node:
        return _fill(_resolve(node["$ref"], root), root, text, depth + 1)
    for taken in ("const", "default"):
        if taken in node:
            return node[taken]
    if node.get("enum"):
        return node["enum"][0]
    for choice in ("anyOf", "oneOf"):
        if node.get(choice):
            return _fill(node[choice][0], root, text, depth + 1)
    if node.get("allOf"):
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            merged = _merge(merged, _resolve(part["$ref"], root) if "$ref" in part else part)
        return _fill(merged, root, text, depth + 1)
    kind = node.get("type", "object" if "properties" in node else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _by_type(kind, node, root, text, depth)


def _by_type(kind: str, node: dict[str, Any], root: dict[str, Any], text: str, depth: int) -> Any:
    if kind == "object":
        properties = node.get("properties", {})
        return {
            name: _fill(properties.get(name, {}), root, text, depth + 1)
            for name in node.get("required", [])
        }
    if kind == "array":
        count = int(node.get("minItems", 0))
        return [_fill(node.get("items", {}), root, text, depth + 1) for _ in range(count)]
    if kind == "string":
        if "pattern" in node:
            raise Unfillable("a pattern")
        value = text[: node["maxLength"]] if "maxLength" in node else text
        return value.ljust(int(node.get("minLength", 0)), ".")
    if kind in ("integer", "number"):
        return _number(node, kind)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    raise Unfillable(f"type {kind}")


def _number(node: dict[str, Any], kind: str) -> int | float:
    low = node.get("minimum")
    if "exclusiveMinimum" in node:
        low = node["exclusiveMinimum"] + 1
    value = low if low is not None else 0
    return int(value) if kind == "integer" else value


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    if not ref.startswith("#/"):
        raise Unfillable(f"$ref {ref}")
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            raise Unfillable(f"$ref {ref}")
        node = node[part]
    return node


def _merge(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    merged = {**left, **right}
    merged["properties"] = {**left.get("properties", {}), **right.get("properties", {})}
    merged["required"] = [*left.get("required", []), *right.get("required", [])]
    return merged
