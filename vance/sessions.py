"""`vance sessions`: your chats, where each was opened, what was said last, and how to resume
one (`vance chat --session sess_N`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from vance.api import ApiError, BrainApi
from vance.fingerprint import Fingerprint
from vance.render import listing, short_time, status_text

# How much of the last message a row shows.
SAID_CHARS = 60


def where(session: dict[str, Any], here: Fingerprint) -> tuple[str, bool]:
    """Where the session was opened, as this terminal sees it, and whether `vance chat` here
    can resume it (the Brain hands a session only to the machine that opened it)."""
    fingerprint = session.get("fingerprint") or {}
    machine, working_dir = fingerprint.get("machineId"), fingerprint.get("workingDir")
    if session.get("clientType") == "web":
        return "web", False
    if machine and machine != here.machine_id:
        return "another machine", False
    if not working_dir or working_dir == here.working_dir:
        return "here", True
    home = str(Path.home())
    shown = "~" + working_dir[len(home) :] if working_dir.startswith(home + "/") else working_dir
    return shown, True


def last_said(api: BrainApi, session: dict[str, Any]) -> str:
    """The person's last message in the session's chat ("" when none, or unreadable); a
    worker's report, an inbox answer or an order (`[report from …`, `[control: …`) is not
    theirs."""
    chat = session.get("chatProcessId")
    if not chat:
        return ""
    try:
        detail = api.get(f"processes/{chat}", messages=20)
    except ApiError:
        return ""
    said = [
        m["content"]
        for m in detail.get("conversation") or []
        if m.get("role") == "user" and not str(m.get("content")).startswith("[")
    ]
    text = " ".join(said[-1].split()) if said else ""
    return text if len(text) <= SAID_CHARS else text[: SAID_CHARS - 1] + "…"


def branches(api: BrainApi) -> dict[str, str]:
    """Each thinking-space branch's session, as `branch <title>` (a branch is a chat too)."""
    try:
        spaces, _ = api.results("spaces", limit=50)
    except ApiError:
        return {}
    return {
        str(node["sessionId"]): f"branch “{node['title']}”" if node.get("parentId") else ""
        for space in spaces
        for node in space.get("nodes") or []
        if node.get("sessionId")
    }


def sessions_table(
    api: BrainApi, sessions: list[dict[str, Any]], here: Fingerprint, title: str
) -> tuple[Table, list[str]]:
    """The table, and the ids this terminal can resume."""
    table = listing(title, "id", "status", "where", "active", "about")
    resumable = []
    branch_of = branches(api) if sessions else {}
    for session in sessions:
        place, here_ok = where(session, here)
        if here_ok:
            resumable.append(str(session["id"]))
        table.add_row(
            Text(str(session["id"]), style="bold" if here_ok else "dim"),
            status_text(session.get("status")),
            place,
            short_time(session.get("lastActivityAt") or session.get("createdAt")),
            last_said(api, session) or branch_of.get(str(session["id"]), ""),
        )
    return table, resumable


def list_sessions(
    api: BrainApi, here: Fingerprint, *, everything: bool, limit: int
) -> tuple[Table, list[str]]:
    """Your chats, newest first: not the system's sessions; not the closed ones unless
    `everything`."""
    rows, _ = api.results("sessions", system="false", limit=limit if everything else 200)
    shown = [row for row in rows if everything or row.get("status") != "CLOSED"][:limit]
    kind = "all" if everything else "open and suspended"
    return sessions_table(api, shown, here, f"Your sessions: {kind} ({len(shown)})")
