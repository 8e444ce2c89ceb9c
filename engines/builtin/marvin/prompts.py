"""What marvin's LLM steps are offered and asked: the tool schemas of `plan` and `replan`, the
default schema of a worker's structured result, and the prompts, with the digest of finished
nodes that every plan and re-plan reads."""

from __future__ import annotations

import json
from typing import Any

from engines.builtin.marvin.state import MarvinState
from engines.capabilities import ToolSchema
from engines.tasktree import KINDS, TaskNode

# The kinds as a plan offers them: WORKER first. A small model copies the order of an enum it
# is shown (with PLAN first, a 135M model nested PLANs until the tree was too deep).
PLAN_KINDS = ["WORKER", "AGGREGATE", "USER_INPUT", "PLAN"]
# The recipes a planned WORKER may name (an enum: a free string drew words, which named no
# recipe): marvin's own worker, a frankie, or a nested deep think.
WORKER_RECIPES = ["marvin-worker", "frankie", "deep-think"]
# Bounds a model cannot run past: tasks in one plan (by default marvin's maxNodes; a plan is
# offered the room its tree has left), and the length of a title and a goal.
MAX_PLANNED = 20
TITLE_CHARS = 80
GOAL_CHARS = 600


# The fields a minimal plan offers (marvin's `planSchema: minimal`, for small models: a 135M
# model offered dependsOn, outputSchema and recipe too planned no WORKER at all).
MINIMAL_FIELDS = ("kind", "title", "goal")


def task_schema(*, minimal: bool = False) -> dict[str, Any]:
    """One task of a plan (plan_tasks) or of a re-plan's additions (replan_tasks)."""
    if minimal:
        full = task_schema()
        kept = {name: full["properties"][name] for name in MINIMAL_FIELDS}
        return {**full, "properties": kept}
    return {
        "type": "object",
        "properties": {
            "kind": {"enum": PLAN_KINDS},
            "title": {"type": "string", "minLength": 1, "maxLength": TITLE_CHARS},
            "goal": {"type": "string", "maxLength": GOAL_CHARS},
            "recipe": {"enum": WORKER_RECIPES},
            # Tasks of this list by position (0 is the first) or nodes of the tree by id (n3).
            "dependsOn": {"type": "array", "items": {"type": ["integer", "string"]}},
            "outputSchema": {"type": "object"},
        },
        "required": ["kind", "title"],
        "additionalProperties": False,
    }


TASK = task_schema()
assert set(PLAN_KINDS) == set(KINDS)


def plan_tasks(max_items: int = MAX_PLANNED, *, minimal: bool = False) -> ToolSchema:
    """The `plan` step's tool, offering at most `max_items` tasks (the tree's room); with
    `minimal`, tasks of kind, title and goal only."""
    return ToolSchema(
        name="plan_tasks",
        description=PLAN_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "tasks": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": max(1, max_items),
                    "items": task_schema(minimal=minimal),
                }
            },
            "required": ["tasks"],
            "additionalProperties": False,
        },
    )


PLAN_DESCRIPTION = (
    "Break the goal into a short list of tasks. Mostly WORKER tasks: one job a "
    "worker does on its own (give it a title and a goal saying what to produce); WORKER tasks "
    "run at the same time unless one dependsOn another. USER_INPUT only for a question only "
    "the person can answer; PLAN only for a part too big to plan now (planned later, from the "
    "results before it); end with one AGGREGATE task, which writes the final report from the "
    "workers' results. A WORKER may give an outputSchema (JSON Schema of an object) for its "
    "result."
)
PLAN_TASKS = plan_tasks()

REPLAN_TASKS = ToolSchema(
    name="replan_tasks",
    description="Some tasks failed. Decide what to do: add new tasks (they run before the "
    "report), retry failed nodes by id, skip nodes by id (failed or not started yet).",
    parameters={
        "type": "object",
        "properties": {
            "add": {"type": "array", "maxItems": MAX_PLANNED, "items": TASK},
            "retry": {"type": "array", "items": {"type": "string"}},
            "skip": {"type": "array", "items": {"type": "string"}},
            "reason": {"type": "string"},
        },
        "additionalProperties": False,
    },
)

# A worker's structured result when its task names no outputSchema.
DEFAULT_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "findings": {"type": "array", "items": {"type": "string"}},
        "sources": {"type": "array", "items": {"type": "string"}},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["summary", "findings", "sources", "confidence"],
    "additionalProperties": False,
}

# The share of an aggregate call's budget the workers' results take together (the rest: the
# system prompt, the conversation, the answer's room is already set aside), and the least one
# result is given however many there are.
AGGREGATE_SHARE = 0.7
RESULT_MIN_TOKENS = 16
# How much of one node's result a digest line shows.
LINE_CHARS = 300


def estimate_tokens(text: str) -> int:
    """About four characters a token: a bound, not a count."""
    return (len(text) + 3) // 4


def result_summary(result: Any) -> str:
    """A stored result in one line: its `summary` (a structured result), or its text."""
    if isinstance(result, dict) and isinstance(result.get("summary"), str):
        text = result["summary"]
    elif isinstance(result, str):
        text = result
    elif result is None:
        text = ""
    else:
        text = json.dumps(result, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def _line(node: TaskNode) -> str:
    said = node.error if node.status != "DONE" and node.error else result_summary(node.result)
    return f"- {node.id} {node.kind} {node.title!r} {node.status}: {said}"


def digest(state: MarvinState, budget_tokens: int) -> str:
    """Every finished WORKER and USER_INPUT node (title, status, its result's summary or its
    error), oldest first. Over `budget_tokens`, the oldest lines are folded into one line
    that counts them by status, until the rest fits."""
    finished = [n for n in state.nodes if n.kind in {"WORKER", "USER_INPUT"} and n.finished]
    lines = [_line(node) for node in finished]
    folded = 0
    text = "\n".join(lines)
    while folded < len(lines) and estimate_tokens(text) > budget_tokens:
        folded += 1
        text = "\n".join([_folded(finished[:folded]), *lines[folded:]])
    return text


def _folded(nodes: list[TaskNode]) -> str:
    """One line for many nodes: how many of each status, and the first few ids of each."""
    by_status: dict[str, list[str]] = {}
    for node in nodes:
        by_status.setdefault(node.status, []).append(node.id)
    parts = ", ".join(
        f"{len(ids)} {status} ({', '.join(ids[:4])}{', …' if len(ids) > 4 else ''})"
        for status, ids in by_status.items()
    )
    return f"- {len(nodes)} earlier nodes, summarised: {parts}"


def plan_ask(state: MarvinState, node: TaskNode, budget_tokens: int) -> str:
    ask = f"Plan: {node.goal}"
    if node.parentId is not None:
        ask += f"\nIt is part of: {state.root.goal}"
    return ask + _context(state, budget_tokens)


def replan_ask(state: MarvinState, failed: list[TaskNode], budget_tokens: int) -> str:
    lines = "".join(f"\n- {n.id} {n.kind} {n.title!r}: {n.error or 'failed'}" for n in failed)
    waiting = [n for n in state.nodes if not n.finished and n.kind != "PLAN"]
    ask = f"Re-plan: {state.root.goal}\nThese tasks failed:{lines}"
    if waiting:
        ask += "\nNot finished yet:" + "".join(
            f"\n- {n.id} {n.kind} {n.title!r} {n.status}" for n in waiting
        )
    return ask + _context(state, budget_tokens)


def _context(state: MarvinState, budget_tokens: int) -> str:
    text = ""
    if state.steers:
        text += "\nThe person said:" + "".join(f"\n- {steer}" for steer in state.steers)
    finished = digest(state, budget_tokens)
    if finished:
        text += f"\nFinished so far:\n{finished}"
    return text


def aggregate_ask(state: MarvinState, room_tokens: int | None = None) -> str:
    """The goal, every stored result (a structured result as JSON), and what is missing. With
    `room_tokens` (the call's budget, ctx.llm.room), the results share AGGREGATE_SHARE of it
    equally: each longer than its share is cut at its end, so fifty workers' results all reach
    a small model's window, each in part, instead of the middle ones not at all."""
    parts = [f"Aggregate the results into the final report for: {state.root.goal}"]
    done = [n for n in state.nodes if n.kind in {"WORKER", "USER_INPUT"} and n.status == "DONE"]
    missing = missing_lines(state)
    share = None
    if room_tokens is not None and done:
        fixed = estimate_tokens(parts[0] + missing)
        share = max(RESULT_MIN_TOKENS, (int(room_tokens * AGGREGATE_SHARE) - fixed) // len(done))
    for node in done:
        shown = (
            node.result
            if isinstance(node.result, str)
            else json.dumps(node.result, ensure_ascii=False, indent=1)
        )
        if share is not None and estimate_tokens(shown) > share:
            shown = shown[: share * 4 - 1] + "…"
        parts.append(f"## {node.title} ({node.kind}, {node.id})\n{shown}")
    if missing:
        parts.append(f"## Missing (failed, no result)\n{missing}")
    return "\n\n".join(parts)


def missing_lines(state: MarvinState) -> str:
    return "\n".join(
        f"- {node.id} {node.title}: {node.error or 'failed'}"
        for node in state.nodes
        if node.id in state.missing
    )
