"""Workers' progress in `vance chat`: one line per task tree instead of a line per status change
of each worker.

A deep think (marvin) or a strategy (vogon) runs its tree's WORKER nodes as processes of the same
session, and each of them goes IDLE → RUNNING → IDLE → … → CLOSED, a `process-status` event each
time. A worker is known by its tree: a node's `processId` (a worker starts only after the turn
that spawned it committed, and with it the tree that names it). Its status changes are folded
into its tree's summary, `tp_2 deep think: 3 of 5 workers done, 2 running`: counted from the
tree's worker nodes, each by its node's status once finished, else by its process's last status
(fresher than the node's: marvin marks the node when it has read the worker's report). A worker
between turns (IDLE) is still running; only a change of the counts is news.

- On a terminal the summaries are drawn below everything else, just above the prompt, and drawn
  again in place as they change (`lift` erases them before anything is printed, `drop` draws them
  below it); a finished tree's last summary stays as a line of its own.
- Into a pipe a summary is printed when it changes, and never twice (a count that goes back to an
  earlier state is not printed again).

What still prints as before: the tree owner's own status changes, a worker that failed (CLOSED
FAILED or STALE) or drifted, every node that finished with its result or error (vance/tasktree.py),
questions (the inbox) and replies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from vance.prose import draws_live
from vance.tasktree import tree_nodes

# A worker's state in the summary, in the order it is told after "N of M workers done".
TOLD = ("running", "blocked", "paused", "suspended", "failed", "stopped", "skipped", "pending")
# What a process's status (or its close reason) counts as; IDLE and INIT: running (between turns).
BY_STATUS = {"BLOCKED": "blocked", "PAUSED": "paused", "SUSPENDED": "suspended"}
BY_CLOSE = {"DONE": "done", "STOPPED": "stopped"}  # any other close reason: failed
BY_NODE = {"DONE": "done", "FAILED": "failed", "SKIPPED": "skipped"}
FINISHED = {"done", "failed", "stopped", "skipped"}
# Close reasons that still print their own line: the worker did not end as it should.
ALARMING = {"FAILED", "STALE"}
STYLE = "cyan"


def worker_nodes(tree: Any) -> list[dict[str, Any]]:
    """The nodes a worker process runs: WORKER nodes, and any other that names a process."""
    return [n for n in tree_nodes(tree) if n.get("kind") == "WORKER" or n.get("processId")]


def label(tree: Any) -> str:
    """What the tree is, in the summary: vogon's strategy (its root node is `strategy`), else a
    deep think."""
    vogon = isinstance(tree, dict) and tree.get("rootId") == "strategy"
    return "strategy" if vogon else "deep think"


class WorkerProgress:
    """Which processes are whose workers, and each tree's summary line (module docstring).

    `print_line` prints a line as the chat does (vance/render.py EventPrinter.line);
    `redraw` draws the summaries again in place (a terminal's)."""

    def __init__(
        self, console: Console, print_line: Callable[[Any], None], redraw: Callable[[], None]
    ) -> None:
        self.console = console
        self.print_line = print_line
        self.redraw = redraw
        self.trees: dict[str, list[dict[str, Any]]] = {}  # tree owner -> its worker nodes
        self.labels: dict[str, str] = {}
        self.owner_of: dict[str, str] = {}  # worker process -> the process whose tree names it
        self.processes: dict[str, tuple[str, str | None]] = {}  # process -> status, close reason
        self.printed: dict[str, set[str]] = {}  # tree owner -> summaries printed as lines
        self.footer: dict[str, Text] = {}  # tree owner -> its summary drawn at the bottom
        self.rows = 0  # how many rows of summaries are drawn below everything else

    # --- what the events say ----------------------------------------------------------------------

    def tree(self, owner: str, tree: Any, *, whole: bool) -> None:
        """A task-tree event; `whole`: the chat printed the tree whole just now, which says what a
        summary would (it is not printed again, and a footer is not started for it)."""
        nodes = worker_nodes(tree)
        self.trees[owner], self.labels[owner] = nodes, label(tree)
        for node in nodes:
            if node.get("processId"):
                self.owner_of[str(node["processId"])] = owner
        self._changed(owner, quiet=whole)

    def status(self, process_id: str, status: str, reason: str | None, drift: bool) -> bool:
        """A process-status event: True when it is a worker's, told by its tree's summary (a
        worker that failed or drifted still gets its own line, besides)."""
        self.processes[process_id] = (status, reason)
        if process_id in self.trees and status == "CLOSED":
            self._changed(process_id)  # the tree's owner ended: its summary is its last
        owner = self.owner_of.get(process_id)
        if owner is None:
            return False
        self._changed(owner)
        return not drift and not (status == "CLOSED" and reason in ALARMING)

    def known(self, process_id: str, status: str, reason: str | None) -> None:
        """A process's status as a resume lists it: counted, nothing printed."""
        self.processes[process_id] = (status, reason)

    # --- the summary ------------------------------------------------------------------------------

    def state(self, node: dict[str, Any]) -> str:
        """One worker node: its finished status, else its process's, else the node's own."""
        status = str(node.get("status") or "")
        if status in BY_NODE:
            return BY_NODE[status]
        process = self.processes.get(str(node.get("processId")))
        if process is not None:
            if process[0] == "CLOSED":
                return BY_CLOSE.get(process[1] or "DONE", "failed")
            return BY_STATUS.get(process[0], "running")
        if status in {"RUNNING", "BLOCKED"}:
            return status.lower()
        return "pending"

    def counts(self, owner: str) -> Counter[str]:
        return Counter(self.state(node) for node in self.trees.get(owner, []))

    def summary(self, owner: str) -> str | None:
        """`tp_2 deep think: 3 of 5 workers done, 2 running`; None for a tree without workers."""
        nodes = self.trees.get(owner, [])
        if not nodes:
            return None
        counts = self.counts(owner)
        text = f"{owner} {self.labels.get(owner, 'deep think')}: {counts['done']} of {len(nodes)}"
        text += f" worker{'s' if len(nodes) > 1 else ''} done"
        return text + "".join(f", {counts[word]} {word}" for word in TOLD if counts[word])

    def finished(self, owner: str) -> bool:
        """Every worker finished, or the tree's owner is CLOSED (what did not start never will)."""
        if self.processes.get(owner, ("", None))[0] == "CLOSED":
            return True
        counts = self.counts(owner)
        return sum(counts[word] for word in FINISHED) == len(self.trees.get(owner, []))

    def _changed(self, owner: str, *, quiet: bool = False) -> None:
        text = self.summary(owner)
        if text is None:
            return
        printed = self.printed.setdefault(owner, set())
        finished = self.finished(owner)
        if quiet:
            printed.add(text)
        if draws_live(self.console) and not finished:
            if owner not in self.footer and quiet:
                return
            if owner not in self.footer or self.footer[owner].plain != text:
                self.footer[owner] = Text(text, style=STYLE)
                self.redraw()
            return
        # A finished tree's summary leaves the bottom rows: printed as a line of its own (once).
        lifted = self.footer.pop(owner, None) is not None
        if text not in printed:
            printed.add(text)
            self.print_line(Text(text, style=STYLE))
        elif lifted:
            self.redraw()

    # --- drawing on a terminal --------------------------------------------------------------------

    def lift(self) -> None:
        """Erase the summaries drawn at the bottom: the cursor is at the start of the row below
        them (the prompt's row, erased), and goes to where the first of them began."""
        if self.rows:
            self.console.file.write(f"\x1b[{self.rows}A\r\x1b[J")
            self.rows = 0

    def drop(self) -> None:
        """Draw the summaries below everything printed, one row each (cut to the width)."""
        if self.rows or not self.footer:
            return
        for text in self.footer.values():
            shown = text.copy()
            shown.truncate(max(self.console.width - 1, 1), overflow="ellipsis")
            self.console.print(shown, no_wrap=True, crop=True, soft_wrap=False)
        self.rows = len(self.footer)

    def scrolled(self) -> None:
        """What the user typed ended a line below the summaries: they stay there, no longer the
        last rows; the next drawing puts them below again."""
        self.rows = 0
