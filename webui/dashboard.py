"""The dashboard's process list, grouped by tree: one row per top-level process (one without a
parent: a session's chat, a process created on its own), every process under it (its workers
and theirs) folded beneath that row behind a count ("12 workers: 9 DONE, 2 RUNNING, 1 FAILED"),
listed and nested by parent once the fold is opened. Trees are paged, not processes.

A fold is filled only when it is asked for (`open`, the trees whose folds are open), so a page
(and the page's refresh every few seconds) costs its trees and their counts, not every process
under them: a chat that spawned a thousand workers is one row and one count.

A filter (status, and the category: the ordinary list or the service processes) picks trees:
those whose top-level process or any process under it matches. A process under the top that
matches the status asked for is also shown as a row of its own right under its tree's row,
which is shown (marked as context) even when it does not match itself.

A page is a fixed number of statements, whatever the number of trees or processes: the trees
of the page (and how many there are), their top-level processes with their last task, which of
those match, the count of every tree by outcome (one statement by `parent_id` and `root_id`),
and the processes of the open folds, and with a status filter the matching ones with their last
task.

Which tree a process belongs to follows from `parent` and the budget `root`
(processes/budgets.py): a top-level process's children have it as `root`, except a chat's,
which are budget roots of their own (`root` null, `parent` the chat), whose own children have
them as `root`. So the top of a process is itself (no parent), its parent (no root: a chat's
child), its root (a root without a parent), or its root's parent (the chat above that root).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, F, IntegerField, Q, QuerySet, When

from processes import queries
from processes.last_task import last_task, with_last_turn
from processes.models import ThinkProcess
from processes.states import Status
from vancetope.errors import BadRequest
from vancetope.ids import parse_whole_number

# Trees per page.
PAGE_SIZE = 25
# The processes listed in one open fold; the rest are counted, and listed on the process page
# of the top-level process (its sub-processes) and of each worker.
FOLD_LIMIT = 200
# Matching processes of one tree shown as rows under it (a status filter).
MATCH_LIMIT = 50
# The columns a process in a fold needs (not its task tree or its recipe's snapshot).
FOLD_COLUMNS = (
    "id",
    "parent_id",
    "root_id",
    "status",
    "close_reason",
    "think_engine",
    "recipe_name",
    "goal",
    "updated_at",
)


def top_of() -> Case:
    """The id of a process's top-level process, as a column (see the module's docstring)."""
    return Case(
        When(parent__isnull=True, then=F("pk")),
        When(root__isnull=True, then=F("parent_id")),
        When(root__parent__isnull=True, then=F("root_id")),
        default=F("root__parent_id"),
        output_field=IntegerField(),
    )


def under(rows: QuerySet[ThinkProcess], tops: list[int]) -> QuerySet[ThinkProcess]:
    """The processes of `rows` under the top-level processes `tops`: their children, those
    whose budget root one of them is, and those whose budget root is one of their children (a
    chat's workers' workers); each a test of an indexed column."""
    children = ThinkProcess.objects.filter(parent_id__in=tops).values("pk")
    return (
        rows.filter(Q(parent_id__in=tops) | Q(root_id__in=tops) | Q(root_id__in=children))
        .exclude(pk__in=tops)
        .select_related(None)
    )


def outcome(status: str, close_reason: str) -> str:
    """What a count says of one process: its close reason once CLOSED, else its status."""
    return (close_reason or Status.CLOSED) if status == Status.CLOSED else status


@dataclass
class Node:
    """A process in a fold, and its children there."""

    process: ThinkProcess
    children: list[Node] = field(default_factory=list)


@dataclass
class Tree:
    root: ThinkProcess
    last_task: dict[str, Any] | None
    # The top-level process matches the filter (else its row is context for the rows below).
    matches: bool
    # How many processes are under the top, and how many of each outcome (the most first).
    size: int = 0
    counts: list[tuple[str, int]] = field(default_factory=list)
    # Its fold was asked for: it is open, and `nodes` are the processes under the top, nested.
    opened: bool = False
    nodes: list[Node] = field(default_factory=list)
    # Processes under the top past FOLD_LIMIT, not listed in the open fold.
    hidden: int = 0
    # With a status filter: the matching processes under the top, each with its last task.
    matching: list[tuple[ThinkProcess, dict[str, Any] | None]] = field(default_factory=list)
    # Matching processes under the top past MATCH_LIMIT, not shown.
    matching_hidden: int = 0
    # The page's address with this tree's fold open too (for a browser without the script).
    open_link: str = ""

    @property
    def summary(self) -> str:
        """`12 workers: 9 DONE, 2 RUNNING, 1 FAILED`"""
        counted = ", ".join(f"{count} {word}" for word, count in self.counts)
        return f"{self.size} worker{'s' if self.size != 1 else ''}: {counted}"


@dataclass
class TreePage:
    trees: list[Tree]
    number: int
    pages: int
    total: int


def page_number(value: str | None) -> int:
    """The `page` parameter: a whole number from 1 (none: the first)."""
    if not value:
        return 1
    number = parse_whole_number(value)
    if number is None or number < 1:
        raise BadRequest(f"page must be a whole number from 1, not {value!r}", field="page")
    return number


def open_folds(value: str | None) -> set[int]:
    """The `open` parameter: the trees whose folds are open, as process ids (`tp_3,tp_9`)."""
    opened: set[int] = set()
    for part in (value or "").split(","):
        if not part.strip():
            continue
        head, _, tail = part.strip().partition("_")
        pk = parse_whole_number(tail) if head == "tp" else None
        if pk is None:
            raise BadRequest(
                f"open must be process ids like tp_12, separated by commas, not {part!r}",
                field="open",
            )
        opened.add(pk)
    return opened


def tree_page(
    user: Any,
    *,
    status: str = "",
    category: str = "",
    number: int = 1,
    opened: Collection[int] = (),
) -> TreePage:
    """The trees of page `number` (the last one if it is past it), the newest first: a tree is
    as new as its top-level process; the folds of the trees in `opened` filled. `status` is a
    status or "" (checked by the caller), `category` one of queries.CATEGORIES or ""."""
    readable = queries.readable_processes(user)
    matching = queries.in_category(readable, category)
    if status:
        matching = matching.filter(status=status)
    tops = matching.annotate(top=top_of()).order_by("-top").values_list("top", flat=True).distinct()
    total = tops.count()
    pages = max(1, -(-total // PAGE_SIZE))
    number = min(number, pages)
    ids = list(tops[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]) if total else []
    roots = {
        process.pk: process
        for process in with_last_turn(readable.filter(pk__in=ids)).select_related(None)
    }
    matched = readable.filter(pk__in=ids)
    if status:
        matched = matched.filter(status=status)
    # Which of the tops match the filter themselves: the others are context for their rows.
    matched_tops = set(queries.in_category(matched, category).values_list("pk", flat=True))
    trees = {
        pk: Tree(roots[pk], last_task(roots[pk]), pk in matched_tops) for pk in ids if pk in roots
    }
    if trees:
        count(trees, under(readable, list(trees)))
        fill(trees, readable, [pk for pk in trees if pk in opened])
        if status:
            show_matches(trees, queries.in_category(under(readable, list(trees)), category), status)
    return TreePage(list(trees.values()), number, pages, total)


def count(trees: dict[int, Tree], rows: QuerySet[ThinkProcess]) -> None:
    """Each tree's size and its count by outcome, the most first (one statement)."""
    tallies: dict[int, Counter[str]] = {pk: Counter() for pk in trees}
    grouped = (
        rows.annotate(top=top_of())
        .values("top", "status", "close_reason")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in grouped:
        if row["top"] in tallies:
            tallies[row["top"]][outcome(row["status"], row["close_reason"])] += row["n"]
    for pk, tree in trees.items():
        tree.size = sum(tallies[pk].values())
        tree.counts = sorted(tallies[pk].items(), key=lambda item: (-item[1], item[0]))


def fill(trees: dict[int, Tree], readable: QuerySet[ThinkProcess], opened: list[int]) -> None:
    """The open folds: the first FOLD_LIMIT processes under each top (oldest first, so each
    one's parent is listed before it), nested by parent (one statement)."""
    members: dict[int, list[ThinkProcess]] = {pk: [] for pk in opened}
    if opened:
        listed = under(readable, opened).only(*FOLD_COLUMNS).annotate(top=top_of())
        for member in listed.order_by("pk"):
            members.setdefault(member.top, []).append(member)
    for pk, rows in members.items():
        tree = trees[pk]
        tree.opened = True
        drawn = rows[:FOLD_LIMIT]
        tree.hidden = len(rows) - len(drawn)
        nodes: dict[int, Node] = {}
        for process in drawn:
            node = nodes[process.pk] = Node(process)
            parent = nodes.get(process.parent_id or 0)
            if parent is not None:
                parent.children.append(node)
            else:
                tree.nodes.append(node)


def show_matches(trees: dict[int, Tree], rows: QuerySet[ThinkProcess], status: str) -> None:
    """The processes under the tops in `status`, with their last task, at most MATCH_LIMIT a
    tree (one statement, of at most that many a tree in all)."""
    matches = with_last_turn(rows.filter(status=status).annotate(top=top_of())).order_by("pk")
    for match in matches[: MATCH_LIMIT * len(trees)]:
        tree = trees.get(match.top)  # type: ignore[attr-defined]
        if tree is None:
            continue
        if len(tree.matching) < MATCH_LIMIT:
            tree.matching.append((match, last_task(match)))
        else:
            tree.matching_hidden += 1
    for tree in trees.values():
        # The matches not read at all (past the statement's limit), from the tree's count.
        of_status = sum(n for word, n in tree.counts if word == status)
        if status == Status.CLOSED:
            of_status = sum(n for word, n in tree.counts if word not in Status.values) + of_status
        tree.matching_hidden = max(tree.matching_hidden, of_status - len(tree.matching))
