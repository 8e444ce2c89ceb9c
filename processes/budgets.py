"""Budgets per process tree (ARCHITECTURE §5a): maxChildren, maxDepth, maxTokens, maxWallSeconds.

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
from django.db.models import F, Q, Sum
from django.utils import timezone

from processes.models import ThinkProcess
from processes.queries import chat_process_of
from vancetope.errors import Conflict, TurnControl


class BudgetExceeded(TurnControl, Conflict):
    """A budget of the process's tree is used up. In a turn it ends the turn and the lane
    fails the process (it passes through tools untouched, as every TurnControl does); from an
    interface (a process-create with a parent) it is a 409."""

    error = "budget-exceeded"

    def __init__(self, budget: str, detail: str) -> None:
        super().__init__(f"budget {budget} exceeded: {detail}")
        self.budget = budget


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


def tree_tokens(root_id: int) -> int:
    """Prompt + completion tokens the tree of `root_id` has committed."""
    total = ThinkProcess.objects.filter(Q(pk=root_id) | Q(root_id=root_id)).aggregate(
        tokens=Sum(F("prompt_tokens") + F("completion_tokens"))
    )
    return int(total["tokens"] or 0)


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
    root = parent if root_id in (None, parent.pk) else ThinkProcess.objects.get(pk=root_id)
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
        counted = ThinkProcess.objects.filter(
            pk=root_id, descendants__lt=limits.max_children
        ).update(descendants=F("descendants") + 1)
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

    def check_llm_call(self, unsaved_tokens: int) -> None:
        """`unsaved_tokens`: what this call's earlier LLM calls spent, not yet committed."""
        process = self._process
        if self._chat and process.root_id is None:
            return
        if process.root_id is None and process.descendants == 0:
            root, spent = process, process.prompt_tokens + process.completion_tokens
        else:
            root_id = process.root_id or process.pk
            root = process if root_id == process.pk else self._root_row(root_id)
            spent = tree_tokens(root_id)
        check_spend(root, limits_of(root, process), spent + unsaved_tokens)

    def _root_row(self, root_id: int) -> ThinkProcess:
        if self._root is None:
            self._root = ThinkProcess.objects.get(pk=root_id)
        return self._root
