"""vogon's strategies: checking one, loading the bundled ones, resolving one for a new process.

A strategy is checked against one JSON Schema document (strategy.schema.json beside this file),
then for what a schema cannot say: phase names are unique, `${…}` placeholders name the goal or
an earlier phase, a gate tests only fields the phase's output can have. Every problem names its
field (`phases[1].gate.all[0].op`), for the admin's form and for a refused process alike.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
from django.db import transaction
from django.db.models import QuerySet

from engines.base import ParamsRefused
from recipes_app.models import RecipeScope, Strategy
from recipes_app.services import (
    SCOPE_RANK,
    in_scope_of,
    read_bundled_yaml,
    recipes_in_scope,
    sync_bundled_rows,
)
from vancetope.tenancy.models import Project

BUNDLED_STRATEGIES = Path(__file__).with_name("strategies.yaml")
STRATEGY_SCHEMA = Path(__file__).with_name("strategy.schema.json")
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
REFERENCE = re.compile(r"^([a-z0-9]+(?:-[a-z0-9]+)*)\.(result|output)((?:\.[A-Za-z0-9_-]+)*)$")


class StrategyInvalid(ValueError):
    """A strategy that does not fit; `where` is the offending field's path in it."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message


@functools.cache
def strategy_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(STRATEGY_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def dotted(parts: Sequence[Any]) -> str:
    """A JSON path as the errors spell it: `phases[1].gate.all[0].op`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def check_strategy(document: Any) -> None:
    """StrategyInvalid naming the first problem's field, or nothing."""
    validator = jsonschema.Draft202012Validator(strategy_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        # The innermost problem of an if/then branch is the one that names the field.
        while error.context:
            error = jsonschema.exceptions.best_match(error.context) or error.context[0]
        raise StrategyInvalid(dotted(error.absolute_path), error.message)
    seen: dict[str, dict[str, Any]] = {}
    for index, phase in enumerate(document["phases"]):
        where = f"phases[{index}]"
        if phase["name"] in seen:
            raise StrategyInvalid(f"{where}.name", f"{phase['name']!r} names an earlier phase")
        _check_placeholders(phase["goal"], f"{where}.goal", seen)
        checkpoint = phase.get("checkpoint") or {}
        for key in ("title", "body"):
            if key in checkpoint:
                # A checkpoint is asked once the phase's own result is there.
                _check_placeholders(
                    checkpoint[key], f"{where}.checkpoint.{key}", {**seen, phase["name"]: phase}
                )
        if "output" in phase:
            try:
                jsonschema.Draft202012Validator.check_schema(phase["output"])
            except jsonschema.SchemaError as bad:
                path = dotted(["phases", index, "output", *bad.absolute_path])
                raise StrategyInvalid(path, bad.message) from bad
        if "gate" in phase:
            _check_gate(phase["gate"], f"{where}.gate", phase.get("output"))
        seen[phase["name"]] = phase


def _check_placeholders(text: str, where: str, earlier: dict[str, dict[str, Any]]) -> None:
    for found in PLACEHOLDER.finditer(text):
        reference = found.group(1)
        if reference == "goal":
            continue
        matched = REFERENCE.match(reference)
        if matched is None:
            raise StrategyInvalid(
                where,
                f"${{{reference}}} is not ${{goal}}, ${{<phase>.result}} or "
                "${<phase>.output[.<field>]}",
            )
        name, part = matched.group(1), matched.group(2)
        if name not in earlier:
            names = ", ".join(earlier) or "none"
            raise StrategyInvalid(
                where, f"${{{reference}}} names no earlier phase (earlier: {names})"
            )
        if part == "output" and "output" not in earlier[name]:
            raise StrategyInvalid(where, f"${{{reference}}}: phase {name!r} declares no output")


def _check_gate(node: dict[str, Any], where: str, output: dict[str, Any] | None) -> None:
    for group in ("all", "any"):
        if group in node:
            for index, child in enumerate(node[group]):
                _check_gate(child, f"{where}.{group}[{index}]", output)
            return
    field = str(node["field"])
    if field == "result":
        return
    if output is None:
        raise StrategyInvalid(
            f"{where}.field",
            f"{field!r}: the phase declares no output, so only `result` (its text) can be tested",
        )
    schema: Any = output
    for segment in field.split("."):
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict):
            return  # the output leaves it open from here
        if segment not in properties:
            known = ", ".join(properties) or "none"
            raise StrategyInvalid(
                f"{where}.field", f"{field!r} is not in the phase's output (properties: {known})"
            )
        schema = properties[segment]


# --- bundled strategies --------------------------------------------------------------------------


def read_bundled_strategies(path: Path = BUNDLED_STRATEGIES) -> list[dict[str, Any]]:
    entries = read_bundled_yaml(path) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of strategies")
    for index, entry in enumerate(entries):
        try:
            if not isinstance(entry, dict) or "name" not in entry:
                raise StrategyInvalid("name", "every bundled strategy needs a name")
            check_strategy(entry)
        except StrategyInvalid as invalid:
            raise ValueError(f"{path}: strategy #{index}: {invalid}") from invalid
    return entries


@transaction.atomic
def sync_bundled_strategies(path: Path = BUNDLED_STRATEGIES) -> int:
    """Make the bundled rows equal to strategies.yaml (idempotent); return how many there are."""
    rows = {
        entry["name"]: {
            "title": entry.get("title", ""),
            "description": entry.get("description", ""),
            "phases": entry["phases"],
        }
        for entry in read_bundled_strategies(path)
    }
    return sync_bundled_rows(Strategy, rows)


# --- resolving one for a process -----------------------------------------------------------------


def strategies_in_scope(project: Project) -> QuerySet[Strategy]:
    return Strategy.objects.filter(in_scope_of(project))


def resolve_strategy(project: Project, name: str) -> Strategy | None:
    """The strategy of that name in the project, the narrowest scope winning."""
    rows = sorted(
        strategies_in_scope(project).filter(name=name),
        key=lambda row: SCOPE_RANK[RecipeScope(row.scope)],
    )
    return rows[0] if rows else None


class ProjectDefinitions:
    """Implements engines.capabilities.Definitions for a new process in `project`."""

    def __init__(self, project: Project) -> None:
        self._project = project

    def strategy(self, ref: Any, *, field: str) -> dict[str, Any]:
        if isinstance(ref, str):
            row = resolve_strategy(self._project, ref)
            if row is None:
                raise ParamsRefused(
                    field, f"no strategy {ref!r} in project {self._project.public_id}"
                )
            document, scope, inline = row.document(), row.scope, False
        elif isinstance(ref, dict):
            document, scope, inline = dict(ref), "inline", True
        else:
            raise ParamsRefused(field, "must be a strategy's name or a strategy (an object)")
        try:
            check_strategy(document)
            self._check_recipes(document)
        except StrategyInvalid as invalid:
            if inline:
                raise ParamsRefused(
                    f"{field}.{invalid.where}" if invalid.where else field, invalid.message
                ) from invalid
            raise ParamsRefused(field, f"strategy {ref!r} ({scope}): {invalid}") from invalid
        return {**document, "name": document.get("name") or "inline", "scope": scope}

    def _check_recipes(self, document: dict[str, Any]) -> None:
        """A phase's recipe exists here (a phase without one uses vogon's default worker)."""
        named = {phase["recipe"] for phase in document["phases"] if phase.get("recipe")}
        found = set(
            recipes_in_scope(self._project).filter(name__in=named).values_list("name", flat=True)
        )
        for index, phase in enumerate(document["phases"]):
            if phase.get("recipe") and phase["recipe"] not in found:
                raise StrategyInvalid(
                    f"phases[{index}].recipe",
                    f"no recipe {phase['recipe']!r} in project {self._project.public_id}",
                )
