"""How `vance` shows things: rich tables for lists, and the chat's events as they arrive."""

from __future__ import annotations

import json
import re
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text
from rich.tree import Tree

from vance.inbox import inbox_panel
from vance.progress import WorkerProgress
from vance.prose import LiveAnswer, PrintedAnswer, Said, stream_answer
from vance.spaces import ShownRevisions, space_tree
from vance.tasktree import TaskTreeFollower

STATUS_STYLES = {
    "RUNNING": "green",
    "IDLE": "cyan",
    "BLOCKED": "yellow",
    "PAUSED": "yellow",
    "SUSPENDED": "magenta",
    "CLOSED": "dim",
    "INIT": "dim",
}
LEVEL_STYLES = {"error": "bold red", "warning": "yellow", "info": "blue", "success": "green"}
# Statuses of the chat process every turn passes through; not worth a line each time.
ROUTINE_CHAT_STATUSES = {"RUNNING", "IDLE"}
PROMPT = "you › "


def status_text(status: str | None, close_reason: str | None = None) -> Text:
    label = status or "?"
    if close_reason:
        label = f"{label}/{close_reason}"
    return Text(label, style=STATUS_STYLES.get(status or "", ""))


def listing(title: str, *columns: str | Column) -> Table:
    """A table for an 80-column terminal: no vertical rules; ids, statuses and times are
    never broken (a column named in KEEP_WHOLE), text wraps at spaces."""
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for column in columns:
        if isinstance(column, Column):
            table.columns.append(column)
        else:
            table.add_column(column, no_wrap=column in KEEP_WHOLE, overflow="fold")
    return table


# Columns of ids, statuses and times: read whole or not at all.
KEEP_WHOLE = {
    *("id", "status", "session", "process", "at", "started", "run", "from", "kind"),
    *("tasks", "tokens", "level"),
}
# Run statuses as a column shows them.
RUN_STATUS_LABELS = {"completed_partial": "partial"}


def short_time(value: str | None) -> str:
    """`2026-12-02T06:34:34.1+00:00` as `12-02 06:34`: enough to tell rows apart."""
    return (value or "")[5:16].replace("T", " ")


def tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 10000 else str(count)


def process_table(
    processes: list[dict[str, Any]], title: str = "Processes", *, sessions: bool = True
) -> Table:
    """One row a process: the recipe under its engine when they differ, drift in the status,
    the session only where the rows may come from several, the last task under the goal."""
    columns = ["id", "engine", "status", *(["session"] if sessions else []), "goal", "tokens"]
    table = listing(title, *columns)
    for process in processes:
        usage = process.get("usage") or {}
        engine = Text(process.get("thinkEngine") or "")
        recipe = process.get("recipe") or ""
        if recipe and recipe != engine.plain:
            engine.append(f"\n{recipe}", style="dim")
        status = status_text(process.get("status"), process.get("closeReason"))
        if process.get("contextDrift"):
            status.append(" drift", style="yellow")
        # "~": a server reported no usage, the counts are estimated.
        used = tokens(usage.get("promptTokens", 0)) + "/" + tokens(usage.get("completionTokens", 0))
        table.add_row(
            process.get("id", ""),
            engine,
            status,
            *([process.get("sessionId") or ""] if sessions else []),
            goal_text(process.get("goal"), process.get("lastTask")),
            ("~" if usage.get("estimated") else "") + used,
        )
    return table


def goal_text(goal: str | None, task: dict[str, Any] | None) -> Text:
    """The goal, and below it (dim) the process's last task."""
    text = Text((goal or "")[:60])
    if task:
        text.append(f"\nlast: {last_task_text(task)}", style="dim")
    return text


def last_task_text(task: dict[str, Any] | None) -> str:
    """A process's last task in a table cell: `title (STATUS)`, a node's id first."""
    if not task:
        return ""
    label = f"{task['id']} {task['title']}" if task.get("id") else str(task.get("title", ""))
    return f"{label[:60]} ({task.get('status', '')})"


def engines_table(engines: list[dict[str, Any]]) -> Table:
    table = listing("Think engines", Column("name", no_wrap=True), "version", "description")
    for engine in engines:
        table.add_row(
            str(engine.get("name", "")),
            str(engine.get("version", "")),
            str(engine.get("description") or engine.get("title") or ""),
        )
    return table


def recipes_table(recipes: list[dict[str, Any]]) -> Table:
    table = listing("Recipes", Column("name", no_wrap=True), "engine", "scope", "title")
    for recipe in recipes:
        table.add_row(
            str(recipe.get("name", "")),
            str(recipe.get("engine", "")),
            str(recipe.get("scope") or ""),
            str(recipe.get("title") or ""),
        )
    return table


def runs_table(runs: list[dict[str, Any]], title: str = "Runs") -> Table:
    """Run logs (PROTOCOL's run object): what started each, on what, and how it ended."""
    table = listing(
        title, "id", "trigger", "process", "status", "started", "tasks", "tokens", "why"
    )
    for run in runs:
        trigger = run.get("trigger") or {}
        source = trigger.get("workflowId") or trigger.get("cronId") or trigger.get("webhookId")
        reasons = "; ".join(r.get("reason", "") for r in run.get("blockedReasons") or [])
        blocked = run.get("tasksBlocked", 0)
        if blocked:
            reasons = f"{blocked} blocked" + (f": {reasons}" if reasons else "")
        status = str(run.get("status") or "")
        table.add_row(
            run.get("id", ""),
            f"{trigger.get('type', '')} {source or ''}".strip(),
            (run.get("scope") or {}).get("processId") or "",
            Text(RUN_STATUS_LABELS.get(status, status), STATUS_STYLES.get(status.upper(), "")),
            short_time(run.get("startedAt")),
            str(run.get("tasksExecuted", 0)),
            tokens(int(run.get("tokensUsed", 0))),
            run.get("error") or reasons,
        )
    return table


def notifications_table(rows: list[dict[str, Any]], title: str = "Notifications") -> Table:
    """Notifications, newest first: unread ones marked with a dot."""
    table = listing(title, Column("", no_wrap=True), "id", "level", "at", "run", "text")
    for row in rows:
        table.add_row(
            "" if row.get("read") else "●",
            row.get("id", ""),
            row.get("level", ""),
            short_time(row.get("createdAt")),
            row.get("runId") or "",
            row.get("text", ""),
        )
    return table


# The protocol's words for what a person typed, in the Brain's error messages.
FIELD_WORDS = {
    "processId": "tp_N",
    "itemId": "inb_N",
    "nodeId": "node_N",
    "spaceId": "spc_N",
    "sessionId": "sess_N",
    "message": "TEXT",
    "text": "TEXT",
    "title": "TITLE",
    "seq": "SEQ",
    "status": "STATUS",
}
FRAME_COMMANDS = {
    "inbox-answer": "/answer",
    "inbox-dismiss": "/dismiss",
    "inbox-list": "/inbox",
    "process-list": "/processes",
    "process-get": "/tree",
    "session-close": "/close",
    "space-suggest": "/space start",
    "space-get": "/space",
}
FIELD = re.compile(r"\bdata\.([A-Za-z]+)(\.[A-Za-z0-9_.\[\]]+)?")
FRAME = re.compile(r"\b(process|inbox|session|space)-([a-z-]+)\b")


def in_commands(message: str) -> str:
    """A Brain's error message in the words of the commands: `data.processId` is `tp_N`,
    `process-resume` is `/resume`."""

    def field(found: re.Match[str]) -> str:
        return FIELD_WORDS.get(found[1], found[1]) + (found[2] or "")

    def frame(found: re.Match[str]) -> str:
        name = found[0]
        if name in FRAME_COMMANDS:
            return FRAME_COMMANDS[name]
        if found[1] in {"process", "space"}:
            return "/" + ("space " if found[1] == "space" else "") + found[2].replace("-", " ")
        return name

    return FRAME.sub(frame, FIELD.sub(field, message))


def error_text(data: dict[str, Any], command: str | None = None) -> Text:
    """A refusal as the person reads it: which command, why, and the Brain's code last."""
    message = in_commands(str(data.get("message") or data.get("error") or "refused"))
    text = Text(f"{command}: " if command else "", style="bold red")
    text.append(message, style="bold red")
    text.append(f"  ({data.get('code')} {data.get('error')})", style="dim")
    return text


class EventPrinter:
    """Shows session events in order: a reply's deltas as they stream (Markdown on a terminal,
    vance/prose.py), ended by its stored message (printed whole if its deltas were missed)."""

    def __init__(self, console: Console, *, prompt: bool | None = None) -> None:
        self.console = console
        # The input prompt, on a terminal only: redrawn below whatever is printed.
        self.prompt = console.is_terminal if prompt is None else prompt
        self.prompting = False
        # Showing the missed events of a resume: the user's own lines are shown too.
        self.replaying = False
        self.chat_process_id: str | None = None
        self.streaming: str | None = None  # the process whose reply is being streamed
        self.answer: LiveAnswer | PrintedAnswer | None = None  # and how it is shown
        # What each process has streamed of its current reply, so a final message replayed
        # after a reconnect is not shown a second time.
        self.streamed: dict[str, str] = {}
        self.statuses: dict[str, str] = {}  # the last status seen of each process
        # Inbox items as last seen (events, /inbox), so /answer knows each one's kind.
        self.inbox_items: dict[str, dict[str, Any]] = {}
        self.trees = TaskTreeFollower()
        self.progress = WorkerProgress(console, self.line, self._redraw)  # workers, per tree
        self.spaces = ShownRevisions()  # the space revisions printed
        # The /command being run: a refusal names it.
        self.command: str | None = None

    def show_prompt(self) -> None:
        """`you › ` on the line where the user types, unless a reply is streaming there; the
        progress lines of trees at work just above it (vance/progress.py)."""
        if self.streaming is None:
            self.progress.drop()
        if self.prompt and not self.prompting and self.streaming is None:
            self.console.print(PROMPT, style="bold green", end="")
            self.prompting = True

    def typed(self) -> None:
        """The user ended a line: the prompt's line is theirs now."""
        self.prompting = False
        self.progress.scrolled()

    def _clear_prompt(self) -> None:
        if self.prompting:
            self.console.file.write("\r\x1b[2K")  # back to the line's start, erase it
            self.prompting = False

    def end_stream(self, final: str | None = None) -> None:
        if self.answer is not None:
            self.answer.end(final)
        self.answer = self.streaming = None

    def line(self, renderable: Any = None) -> None:
        """Print a line (None: only draw the progress lines again, in place)."""
        self.end_stream()
        self._clear_prompt()
        self.progress.lift()
        if renderable is not None:
            self.console.print(renderable)
        self.show_prompt()

    def _redraw(self) -> None:
        """The progress lines changed: drawn again now, or when the streaming reply ends."""
        if self.streaming is None:
            self.line()

    def error(self, data: dict[str, Any]) -> None:
        """A refusal of the Brain, naming the /command that asked (if one did)."""
        self.line(error_text(data, self.command))

    def status(self, process_id: str, status: str, close_reason: str | None = None) -> None:
        """A status a reply reported (/pause, /resume, …): one line, and none for its
        process-status event, which says the same (whichever of the two comes first)."""
        if self.statuses.get(process_id) == status:
            return
        self.statuses[process_id] = status
        line = Text(f"· {process_id} ", style="dim")
        line.append_text(status_text(status, close_reason))
        self.line(line)

    def show(self, event: str, data: dict[str, Any]) -> None:
        handler = getattr(self, "on_" + event.replace("-", "_"), None)
        if handler is None:
            self.line(Text(f"· {event}: {json.dumps(data)[:200]}", style="dim"))
        else:
            handler(data)

    def _prefix(self, process_id: str) -> str:
        return "brain › " if process_id == self.chat_process_id else f"{process_id} › "

    def on_chat_delta(self, data: dict[str, Any]) -> None:
        process_id = str(data.get("processId"))
        if self.answer is None or self.streaming != process_id:
            self.end_stream()
            self._clear_prompt()
            self.progress.lift()
            self.answer = stream_answer(self.console, self._prefix(process_id))
            self.streaming = process_id
        text = str(data.get("text", ""))
        self.streamed[process_id] = self.streamed.get(process_id, "") + text
        self.answer.add(text)

    def on_chat_message(self, data: dict[str, Any]) -> None:
        process_id = str(data.get("processId"))
        role = data.get("role")
        streamed = self.streamed.pop(process_id, None)
        if role == "assistant" and self.streaming == process_id:
            self.end_stream(str(data.get("text", "")))
            self.show_prompt()
            return
        if role == "assistant" and streamed == data.get("text"):
            return  # streamed in full before a reconnect; this is its replayed final message
        if role == "user" and process_id == self.chat_process_id:
            if self.replaying:
                # A transcript shown again (a resume): the user's side of it too.
                self.line(Text.assemble(("you › ", "bold green"), str(data.get("text", ""))))
            return  # typed here just now: the terminal shows it already
        if role == "assistant":
            self.line(Said(self._prefix(process_id), str(data.get("text", ""))))
        else:
            self.line(Text(f"{process_id} [{role}] {data.get('text', '')}", style="dim"))

    def on_process_status(self, data: dict[str, Any]) -> None:
        process_id = str(data.get("processId"))
        status = data.get("status")
        previous = self.statuses.get(process_id)
        self.statuses[process_id] = str(status)
        drift = bool(data.get("contextDrift"))
        if self.progress.status(process_id, str(status), data.get("closeReason"), drift):
            return  # a worker's: its tree's progress line tells it
        if previous == status:
            return  # shown already, from the reply to the call that changed it
        routine = status in ROUTINE_CHAT_STATUSES
        # The chat process's turns go RUNNING → IDLE all the time; show only the way back
        # from anything else (a resume after PAUSED or SUSPENDED).
        if (
            process_id == self.chat_process_id
            and routine
            and previous in {None, *ROUTINE_CHAT_STATUSES}
        ):
            return
        line = Text(f"· {process_id} ", style="dim")
        line.append_text(status_text(status, data.get("closeReason")))
        if data.get("contextDrift"):
            line.append("  context drift: /resume, /stop or /reset it", style="yellow")
        self.line(line)

    def on_task_tree(self, data: dict[str, Any]) -> None:
        process_id, tree = str(data.get("processId")), data.get("tree")
        shown = self.trees.update(process_id, tree)
        for each in shown:
            self.line(each)
        self.progress.tree(process_id, tree, whole=any(isinstance(s, Tree) for s in shown))

    def on_inbox_item(self, data: dict[str, Any]) -> None:
        item = data.get("item") or {}
        self.inbox_items[str(item.get("id"))] = item
        self.line(inbox_panel(item))

    def on_notification(self, data: dict[str, Any]) -> None:
        level = str(data.get("level") or "info")
        self.line(Text(f"! {data.get('text', '')}", style=LEVEL_STYLES.get(level, "")))

    def on_conversation_folded(self, data: dict[str, Any]) -> None:
        fold = data.get("compaction") or {}  # a compaction folded the oldest turns, or undone
        what = "undone" if fold.get("undoneAt") else f"{fold.get('turns')} earlier turns summarised"
        self.line(Text(f"~ {data.get('processId')}: {fold.get('id')} {what}", style="dim"))

    def on_run(self, data: dict[str, Any]) -> None:
        """A run of this person started or finished: shown only when it needs them. Their own
        runs (trigger `user`: each wake of a process they chat with) only when one failed (a
        process-status says the rest); a system run (cron, webhook, workflow, brain linker)
        when it failed or waits for an answer (blocked), not each routine start and end."""
        run = data.get("run") or {}
        trigger = (run.get("trigger") or {}).get("type")
        status = run.get("status")
        if status not in ({"failed"} if trigger == "user" else {"failed", "blocked"}):
            return
        line = Text(f"· {run.get('id')} {trigger} {status}", style="dim")
        line.append(f"  {run.get('tasksExecuted', 0)} tasks, {run.get('tokensUsed', 0)} tokens")
        reasons = "; ".join(r.get("reason", "") for r in run.get("blockedReasons") or [])
        if run.get("error") or reasons:
            line.append(f"  {run.get('error') or reasons}", style="red" if run.get("error") else "")
        if status == "blocked":
            line.append("  (/inbox)", style="yellow")
        self.line(line)

    def on_space_state(self, data: dict[str, Any]) -> None:
        """The thinking space changed (branches suggested, split, returned): its tree, once a
        revision (the reply to the command that changed it may have shown it)."""
        if self.spaces.is_new(data.get("space") or {}):
            self.line(space_tree(data.get("space") or {}))

    def on_session_status(self, data: dict[str, Any]) -> None:
        self.line(Text(f"· session {data.get('status')}", style="dim"))

    def on_tool_call(self, data: dict[str, Any]) -> None:
        arguments = json.dumps(data.get("arguments") or {})
        self.line(
            Text(f"⚙ {data.get('processId')} calls {data.get('tool')}({arguments[:200]})", "blue")
        )
