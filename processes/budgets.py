"""Budgets per process tree: maxChildren, maxDepth, maxTokens, maxWallSeconds.

A tree is a budget root and every process spawned under it. The budget root is the top-most
ancestor that is not its session's chat process: a chat process (arthur) lives as long as its
session, so each task it starts gets a budget of its own. The settings
(VANCETOPE_TREE_MAX_*) set each budget; the root's recipe params and process params may lower
it. Checked before every spawn (`check_spawn`: depth, tokens, time, and atomically against the
root's `descendants` count) and before every LLM call (`check_llm_call`: tokens, time); a
breach raises BudgetExceeded, which ends the turn: the lane fails the process with the budget
named, and its parent hears of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from processes.models import ThinkProcess
from processes.queries import chat_process_of
from vancetope.errors import Conflict, TurnControl
from vancetope.infra import fastsql


class BudgetExceeded(TurnControl):
    """A budget of the process's tree is used up. In a turn it ends the turn and the lane
    fails the process (no engine's or tool's `except Exception` catches it, as no
    TurnControl); an interface's call (a process-create with a parent) gets `refusal()`, a
    409."""

    error = "budget-exceeded"

    def __init__(self, budget: str, detail: str) -> None:
        self.message = f"budget {budget} exceeded: {detail}"
        super().__init__(self.message)
        self.budget = budget

    def refusal(self) -> Conflict:
        return Conflict(self.message, error=self.error)


@dataclass(frozen=True)
class Limits:
    max_children: int
    max_depth: int
    max_tokens: int
    # 0: no limit.
    max_wall_seconds: float


def _lowered(setting: float, params: dict[str, Any], key: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return setting
    return min(setting, value) if setting else value


# Each budget's param and the setting it lowers.
BUDGETS = {
    "maxChildren": "VANCETOPE_TREE_MAX_CHILDREN",
    "maxDepth": "VANCETOPE_TREE_MAX_DEPTH",
    "maxTokens": "VANCETOPE_TREE_MAX_TOKENS",
    "maxWallSeconds": "VANCETOPE_TREE_MAX_WALL_SECONDS",
}


def limits_of(root: ThinkProcess, process: ThinkProcess | None = None) -> Limits:
    """The settings, lowered by the recipe params and process params of the root and of the
    process that spends (a sub-orchestrator may hold its part of the tree tighter)."""
    values = {key: float(getattr(settings, name)) for key, name in BUDGETS.items()}
    for source in [root] if process is None or process is root else [root, process]:
        params = {**source.recipe_snapshot.get("params", {}), **source.engine_params}
        for key in values:
            values[key] = _lowered(values[key], params, key)
    return Limits(
        max_children=int(values["maxChildren"]),
        max_depth=int(values["maxDepth"]),
        max_tokens=int(values["maxTokens"]),
        max_wall_seconds=values["maxWallSeconds"],
    )


def is_chat_process(process: ThinkProcess) -> bool:
    return chat_process_of(process.session_id) == process.pk


@dataclass(frozen=True)
class Placement:
    """Where a new child goes: its depth and budget root (None: it is its own)."""

    depth: int
    root_id: int | None


# The tokens the processes below a budget root (`%s`) have committed, as a scalar subquery.
BELOW_ROOT = (
    "(SELECT COALESCE(SUM({prompt_tokens} + {completion_tokens}), 0) FROM {table} "
    "WHERE {root_id} = %s)"
)


def tree_tokens(root_id: int) -> int:
    """Prompt + completion tokens the tree of `root_id` has committed (one prepared
    statement: a spawn and an LLM call check it on the turn path)."""
    below = fastsql.sql(ThinkProcess, BELOW_ROOT)
    total = fastsql.scalar(
        ThinkProcess,
        f"SELECT {{prompt_tokens}} + {{completion_tokens}} + {below} FROM {{table}} "
        "WHERE {id} = %s",
        [root_id, root_id],
    )
    return int(total or 0)


def check_spend(root: ThinkProcess, limits: Limits, spent: int) -> None:
    """The tree's tokens and its time, against their budgets."""
    if spent >= limits.max_tokens:
        raise BudgetExceeded(
            "maxTokens",
            f"the tree of {root.public_id} has spent {spent} tokens, the limit is "
            f"{limits.max_tokens}",
        )
    if limits.max_wall_seconds:
        age = (timezone.now() - root.created_at).total_seconds()
        if age > limits.max_wall_seconds:
            raise BudgetExceeded(
                "maxWallSeconds",
                f"the tree of {root.public_id} has run {age:.0f} s, the limit is "
                f"{limits.max_wall_seconds:g} s",
            )


def check_spawn(parent: ThinkProcess) -> Placement:
    """Before `parent` spawns a child: the depth budget, the tree's tokens and time (a child
    of a tree that has used them up could not make one LLM call), then one more child of its
    tree (counted on the root by compare-and-swap, so concurrent spawns cannot overshoot)."""
    chat = parent.root_id is None and is_chat_process(parent)
    root_id = None if chat else (parent.root_id or parent.pk)
    root = parent if root_id in (None, parent.pk) else _row(root_id)
    limits = limits_of(root, parent)
    depth = parent.depth + 1
    if depth > limits.max_depth:
        raise BudgetExceeded(
            "maxDepth",
            f"a child of {parent.public_id} would be at depth {depth}, the limit "
            f"is {limits.max_depth}",
        )
    if root_id is not None:
        check_spend(root, limits, tree_tokens(root_id))
        counted = fastsql.update(
            ThinkProcess,
            "{id} = %s AND {descendants} < %s",
            [root_id, limits.max_children],
            {"descendants": fastsql.Add(1)},
        )
        if counted != 1:
            raise BudgetExceeded(
                "maxChildren",
                f"the tree of tp_{root_id} has spawned {limits.max_children} processes, "
                f"the limit is {limits.max_children}",
            )
        if root_id == parent.pk:
            parent.descendants += 1
    return Placement(depth=depth, root_id=root_id)


class TreeBudget:
    """The LLM-call check for one process (built with its context). A session's chat process
    spends no tree's budget; a process alone in its tree is checked without a query."""

    def __init__(self, process: ThinkProcess, *, chat: bool) -> None:
        self._process = process
        self._chat = chat
        # The budget root, read once per context (its params and age are what is checked).
        self._root: ThinkProcess | None = None
        # What the tree had committed when this context first asked: a call's later LLM calls
        # add their own unsaved tokens to it instead of summing the tree again (what other
        # processes of the tree commit meanwhile is seen by their own checks and the next
        # call's).
        self._committed: int | None = None

    def check_llm_call(self, unsaved_tokens: int) -> None:
        """`unsaved_tokens`: what this call's earlier LLM calls spent, not yet committed."""
        process = self._process
        if self._chat and process.root_id is None:
            return
        if process.root_id is None and process.descendants == 0:
            root, spent = process, process.prompt_tokens + process.completion_tokens
        else:
            root_id = process.root_id or process.pk
            if self._committed is None:
                self._root, self._committed = root_and_tokens(root_id)
            root = process if root_id == process.pk or self._root is None else self._root
            spent = self._committed
        check_spend(root, limits_of(root, process), spent + unsaved_tokens)


# What the budgets read of a tree's root (limits_of, check_spend): not its engine_state, which
# for marvin is the whole task tree, read for every LLM call of every worker otherwise.
ROOT_FIELDS = (
    "id",
    "recipe_snapshot",
    "engine_params",
    "created_at",
    "prompt_tokens",
    "completion_tokens",
)


def _row(root_id: int) -> ThinkProcess:
    found = fastsql.select(ThinkProcess, "{id} = %s", [root_id], names=ROOT_FIELDS)
    if not found:
        raise ThinkProcess.DoesNotExist(f"tp_{root_id}")
    return found[0]


def root_and_tokens(root_id: int) -> tuple[ThinkProcess, int]:
    """The budget root's row and the tokens its tree has committed, in one statement."""
    below = fastsql.sql(ThinkProcess, BELOW_ROOT)
    found = fastsql.select(
        ThinkProcess, "{id} = %s", [root_id, root_id], also=[("below", below)], names=ROOT_FIELDS
    )
    if not found:
        raise ThinkProcess.DoesNotExist(f"tp_{root_id}")
    root = found[0]
    return root, int(getattr(root, "below", 0)) + root.prompt_tokens + root.completion_tokens
