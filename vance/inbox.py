"""The inbox in `vance`: items shown inline (the body as Markdown on a terminal, vance/prose.py)
and as a table, and answers typed as one line."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from vance.prose import Prose

STATUS_STYLES = {"OPEN": "yellow", "ANSWERED": "green", "DISMISSED": "dim", "EXPIRED": "dim"}
DECISIONS = {"approve", "reject"}


def answer_from_text(text: str, item: dict[str, Any] | None = None) -> dict[str, Any]:
    """The answer object of docs/protocol.md for what was typed: for an APPROVAL (or an item this
    client has not seen) `approve` or `reject`, then an optional comment; for a QUESTION one
    of its options as the choice; anything else as text. The Brain checks the shape and says
    which field is wrong."""
    text = text.strip()
    kind = (item or {}).get("kind")
    first, _, rest = text.partition(" ")
    if kind in {"APPROVAL", None} and first.lower() in DECISIONS:
        answer: dict[str, Any] = {"decision": first.lower()}
        return {**answer, "comment": rest.strip()} if rest.strip() else answer
    if kind == "APPROVAL":
        return {"decision": text}  # refused by the Brain, naming answer.decision
    if text in ((item or {}).get("options") or []):
        return {"choice": text}
    return {"text": text}


def how_to_answer(item: dict[str, Any]) -> str:
    item_id = item.get("id", "inb_N")
    if item.get("kind") == "APPROVAL":
        return f"/answer {item_id} approve|reject [comment]"
    if item.get("kind") == "QUESTION":
        return f"/answer {item_id} <text or one of the options>"
    return f"/dismiss {item_id} once read"


def inbox_panel(item: dict[str, Any]) -> Panel | Text:
    """An OPEN item as a panel with how to answer it; any other as one line of its news."""
    item_id = str(item.get("id", "?"))
    status = str(item.get("status") or "OPEN")
    if status != "OPEN":
        line = Text(f"· inbox {item_id} ", style="dim")
        line.append(status, style=STATUS_STYLES.get(status, ""))
        line.append(f": {item.get('title', '')}")
        if item.get("originDelivered") is False:
            line.append(f" (not delivered: {item.get('originNote')})", style="yellow")
        return line
    parts: list[Any] = [Text(str(item.get("title", "")), style="bold")]
    if item.get("body"):
        parts.append(Prose(str(item["body"])))
    if item.get("options"):
        parts.append(Text("options: " + " | ".join(str(o) for o in item["options"]), "cyan"))
    parts.append(Text(f"answer with: {how_to_answer(item)}", style="dim"))
    title = f"inbox {item_id} · {item.get('kind', '?')} · from {origin_of(item)}"
    return Panel(Group(*parts), title=title, title_align="left", border_style="yellow")


def origin_of(item: dict[str, Any]) -> str:
    """Who posted the item: its process, or a system client's run (the brain linker's); a
    worker's question its parent posted names the worker first (`tp_2, through tp_1`)."""
    poster = str(item.get("originProcessId") or item.get("originRunId") or "?")
    asked_by = item.get("askedBy")
    return f"{asked_by}, through {poster}" if asked_by else poster


def inbox_table(items: list[dict[str, Any]], title: str = "Inbox") -> Table:
    """One row an item; its options or its answer under its title (80 columns)."""
    from vance.render import listing, short_time

    table = listing(title, "id", "kind", "status", "from", "at", "title")
    for item in items:
        status = str(item.get("status", ""))
        answer = item.get("answer") or {}
        text = Text(str(item.get("title", "")))
        if item.get("options"):
            text.append("\n" + " | ".join(str(option) for option in item["options"]), "cyan")
        if answer:
            text.append("\n" + ", ".join(f"{key}: {value}" for key, value in answer.items()), "dim")
        table.add_row(
            str(item.get("id", "")),
            str(item.get("kind", "")),
            Text(status, style=STATUS_STYLES.get(status, "")),
            origin_of(item),
            short_time(item.get("createdAt")),
            text,
        )
    return table


def answered_text(data: dict[str, Any]) -> Text:
    """What an `inbox-answered` reply (or REST answer) says."""
    item = data.get("item") or {}
    if data.get("delivered"):
        return Text(f"answered {item.get('id')}; {origin_of(item)} has it", "green")
    note = item.get("originNote") or "its process is gone"
    return Text(f"answered {item.get('id')}, but not delivered: {note}", style="yellow")
